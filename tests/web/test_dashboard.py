"""The web dashboard in a real headless Chromium, against the REST JSON fetched independently.

A session cluster of real processes (JobManager + TaskManager) runs an unbounded keyed job with
checkpoints; the dashboard served at `/` on its REST port must show what `/overview`, `/jobs/overview`,
`/jobs/:id` and `/jobs/:id/checkpoints` say, refresh without reloading, and cancel the job from its button.
Colouring and the disabled cancel action are checked against a FakeJobManagerView whose metrics and
configuration the test sets (figures worked by hand below).
"""

from __future__ import annotations

import gzip
import http.client
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import strom.web
from playwright.sync_api import Page, expect
from strom.common.config_options import ConfigError
from strom.runtime.jobmanager.read_model import (
    ExecutionState,
    JobDetails,
    JobId,
    JobPlan,
    JobStatus,
    PlanInput,
    PlanNode,
    SubtaskDetails,
    VertexDetails,
    VertexId,
)
from strom.runtime.jobmanager.rest_api import create_rest_app

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.fake_jobmanager_view import NOW_MS, FakeJobManagerView, serving
from tests.engine.test_cluster import submit

REFRESH_MS = 400  # web.refresh-interval of the test cluster: a few refreshes fit in a second
WAIT_MS = 20_000  # the deadline of every wait for what the page shows
SECRET = "wJalrXUtnFEMI-dashboard"


def _job_file(tmp_path: Path) -> str:
    job = tmp_path / "dashboard_job.py"
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.enable_checkpointing(300)
        env.configure(Configuration({{"state.checkpoints.dir": {(tmp_path / "checkpoints").as_uri()!r}}}))
        numbers = env.from_source(DataGeneratorSource(lambda i: (i % 7, i), 10**12, 50.0),
                                  WatermarkStrategy.no_watermarks(), "numbers")
        sums = numbers.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name("running sums")
        sums.map(lambda s: None).name("discard").set_parallelism(2)
        env.execute("dashboard target")
        """)
    )
    return str(job)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SessionCluster, str]]:
    savepoints = tmp_path_factory.mktemp("savepoints").as_uri()
    extra = (
        *("-D", f"web.refresh-interval={REFRESH_MS}", "-D", f"state.savepoints.dir={savepoints}"),
        # fresh figures in a second or two (defaults: reported every 10 s, rates over 60 s)
        *("-D", "metrics.fetcher.update-interval=500", "-D", "metrics.meter.time-span=2000"),
        *("-D", f"s3.secret-key={SECRET}"),  # never shown: the JobManager page lists it masked
    )
    c = SessionCluster(taskmanagers=1, slots=2, extra=extra)
    try:
        job_id = submit(c, _job_file(tmp_path_factory.mktemp("dashboard")))  # checkpoints under its tmp dir
        c.wait_for_state(job_id, ("RUNNING",))
        yield c, job_id
    finally:
        c.close()


def _url(c: SessionCluster, fragment: str) -> str:
    return f"http://127.0.0.1:{c.rest_port}/#/{fragment}"


def _int(page: Page, selector: str) -> int:
    return int(page.locator(selector).inner_text().replace(",", ""))


# -- against the real cluster -------------------------------------------------------------------


def test_the_page_reads_its_refresh_interval_and_actions_from_config(cluster: tuple[SessionCluster, str]) -> None:
    c, _ = cluster
    config = c.get("/config")
    assert config["refresh-interval"] == REFRESH_MS
    assert config["features"]["web-cancel"] is True and config["features"]["web-submit"] is True


def test_overview_shows_the_clusters_taskmanagers_slots_and_jobs(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    c, job_id = cluster
    page.goto(_url(c, "overview"))
    expect(page.locator("[data-field=taskmanagers]")).to_have_text("1", timeout=WAIT_MS)
    overview = c.get("/overview")
    assert _int(page, "[data-field=slots-total]") == overview["slots-total"] == 2
    assert _int(page, "[data-field=jobs-running]") == overview["jobs-running"] == 1
    expect(page.locator(f"[data-table=running-jobs] tr[data-job-id='{job_id}']")).to_contain_text("dashboard target")


def test_jobs_list_shows_the_running_job_with_its_rest_name_and_state(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    c, job_id = cluster
    (summary,) = [j for j in c.get("/jobs/overview")["jobs"] if j["jid"] == job_id]
    page.goto(_url(c, "jobs"))
    row = page.locator(f"[data-table=running-jobs] tr[data-job-id='{job_id}']")
    expect(row).to_contain_text(summary["name"], timeout=WAIT_MS)
    expect(row.locator(".state")).to_have_text(summary["state"])
    expect(page.locator("[data-table=completed-jobs] tr[data-job-id]")).to_have_count(0)


def test_taskmanagers_page_lists_the_rest_apis_taskmanagers(page: Page, cluster: tuple[SessionCluster, str]) -> None:
    c, _ = cluster
    page.goto(_url(c, "taskmanagers"))
    rows = page.locator("[data-table=taskmanagers] tr[data-taskmanager-id]")
    expect(rows).to_have_count(1, timeout=WAIT_MS)
    (tm,) = c.get("/taskmanagers")["taskmanagers"]
    cells = rows.first.locator("td").all_inner_texts()
    assert (cells[0], cells[4]) == (tm["id"], str(tm["slotsNumber"]))


def test_a_taskmanagers_page_shows_its_slots_and_metrics_as_the_rest_api_does(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    c, _ = cluster
    (tm,) = c.get("/taskmanagers")["taskmanagers"]
    page.goto(_url(c, "taskmanagers"))
    page.locator(f"tr[data-taskmanager-id='{tm['id']}'] a").click(timeout=WAIT_MS)
    expect(page.locator("[data-field=slots]")).to_have_text(str(tm["slotsNumber"]), timeout=WAIT_MS)

    def same_metrics() -> bool:  # the TaskManager's first report may land between two reads: wait for a refresh
        names = {m["id"] for m in c.get(f"/taskmanagers/{tm['id']}/metrics")}
        return bool(names) and set(page.locator("[data-table=taskmanager-metrics] th").all_inner_texts()) == names

    wait_until(same_metrics, timeout=WAIT_MS / 1000, what="the page's metrics equal /taskmanagers/:id/metrics")
    page.goto(_url(c, "taskmanagers/no-such-taskmanager"))
    expect(page.locator("[data-page=taskmanager-not-found]")).to_contain_text("not found", timeout=WAIT_MS)


def test_jobmanager_page_shows_the_configuration_with_secrets_masked(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    c, _ = cluster
    page.goto(_url(c, "jobmanager"))
    table = page.locator("[data-table=jobmanager-config]")
    expect(table.locator("tr", has_text="web.refresh-interval").locator("td")).to_have_text(
        str(REFRESH_MS), timeout=WAIT_MS
    )
    expect(table.locator("tr", has_text="s3.secret-key").locator("td")).to_have_text("******")
    assert SECRET not in page.content()
    assert len(table.locator("tr").all()) == len(c.get("/jobmanager/config"))


def test_job_graph_draws_the_plans_vertices_and_edges(
    page: Page, cluster: tuple[SessionCluster, str], screenshots: Path
) -> None:
    c, job_id = cluster
    details = c.get(f"/jobs/{job_id}")
    page.goto(_url(c, f"jobs/{job_id}"))
    expect(page.locator("[data-field=job-name]")).to_have_text(details["name"], timeout=WAIT_MS)
    expect(page.locator("[data-field=job-state]")).to_have_text("RUNNING")
    vertices = page.locator("svg.job-graph g.vertex")
    expect(vertices).to_have_count(len(details["plan"]["nodes"]))
    drawn = {
        vertices.nth(i).get_attribute("data-vertex-id"): (
            vertices.nth(i).locator("title").text_content(),
            vertices.nth(i).locator(".vertex-parallelism").text_content(),
        )
        for i in range(vertices.count())
    }
    assert drawn == {v["id"]: (v["name"], f"Parallelism: {v['parallelism']}") for v in details["vertices"]}
    edges = sum(len(n.get("inputs", [])) for n in details["plan"]["nodes"])
    assert edges >= 1 and page.locator("svg.job-graph g.edge").count() == edges
    page.screenshot(path=screenshots / "job-graph.png", full_page=True)


def test_checkpoint_count_grows_between_refreshes_without_a_reload(
    page: Page, cluster: tuple[SessionCluster, str], screenshots: Path
) -> None:
    c, job_id = cluster
    page.goto(_url(c, f"jobs/{job_id}/checkpoints"))
    completed = page.locator("[data-field=checkpoints-completed]")
    expect(completed).to_be_visible(timeout=WAIT_MS)
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    first = _int(page, "[data-field=checkpoints-completed]")
    page.wait_for_function(
        "n => Number(document.querySelector('[data-field=checkpoints-completed]').textContent) > n",
        arg=first,
        timeout=WAIT_MS,
    )
    shown = _int(page, "[data-field=checkpoints-completed]")
    assert page.evaluate("window.__sameDocument") is True
    # what the page showed was true: the REST API, asked afterwards, has at least as many
    assert c.get(f"/jobs/{job_id}/checkpoints")["counts"]["completed"] >= shown > first
    expect(page.locator("[data-table=checkpoint-history] tr[data-checkpoint-id]").first).to_be_visible()
    page.screenshot(path=screenshots / "job-checkpoints.png", full_page=True)


def test_the_checkpoints_tab_shows_the_configuration_the_job_set(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    """The job file sets enable_checkpointing(300) and a file:// checkpoint directory, nothing else: the
    REST API's CheckpointConfigInfo and the page say so, with Flink's defaults for the rest."""
    c, job_id = cluster
    config = c.get(f"/jobs/{job_id}/checkpoints/config")
    assert (config["interval"], config["mode"], config["timeout"]) == (300, "exactly_once", 600_000)
    assert config["checkpoint_storage"] == "FileSystemCheckpointStorage"
    page.goto(_url(c, f"jobs/{job_id}/checkpoints"))
    shown = page.locator("[data-table=checkpoint-config]")
    expect(shown.locator("tr", has_text="Interval").locator("td")).to_have_text("300 ms", timeout=WAIT_MS)
    expect(shown.locator("tr", has_text="Checkpointing mode").locator("td")).to_have_text("Exactly once")
    expect(shown.locator("tr", has_text="Timeout").locator("td")).to_have_text("10m 0s")
    expect(page.locator("[data-field=latest-restore]")).to_have_text("The job did not restore from a checkpoint.")


def test_a_vertex_panel_lists_each_subtasks_watermark_as_the_rest_api_does(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    """The job assigns no watermarks: every subtask reports Long.MIN_VALUE, shown as 'No watermark'."""
    c, job_id = cluster
    (widest,) = [v for v in c.get(f"/jobs/{job_id}")["vertices"] if v["parallelism"] == 2]
    page.goto(_url(c, f"jobs/{job_id}/overview/{widest['id']}"))
    rows = page.locator("[data-table=watermarks] tr[data-watermark-subtask]")
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    watermarks = c.get(f"/jobs/{job_id}/vertices/{widest['id']}/watermarks")
    assert sorted(w["id"] for w in watermarks) == ["0.currentInputWatermark", "1.currentInputWatermark"]
    assert {w["value"] for w in watermarks} == {str(-(2**63))}
    expect(rows.locator("td:last-child")).to_have_text(["No watermark", "No watermark"])


def test_clicking_a_vertex_lists_its_subtasks_as_the_rest_api_does(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    c, job_id = cluster
    details = c.get(f"/jobs/{job_id}")
    (widest,) = [v for v in details["vertices"] if v["parallelism"] == 2]
    page.goto(_url(c, f"jobs/{job_id}"))
    page.locator(f"svg.job-graph g.vertex[data-vertex-id='{widest['id']}']").click(timeout=WAIT_MS)
    panel = page.locator(f"[data-panel=vertex][data-vertex-id='{widest['id']}']")
    expect(panel.locator("h2", has_text="Subtasks of")).to_have_text(f"Subtasks of {widest['name']}", timeout=WAIT_MS)
    rows = panel.locator("tr[data-subtask]")
    expect(rows).to_have_count(2)
    shown = {
        (rows.nth(i).locator("td").nth(0).inner_text(), rows.nth(i).locator("td").nth(4).inner_text()) for i in (0, 1)
    }
    subtasks = c.get(f"/jobs/{job_id}/vertices/{widest['id']}")["subtasks"]
    assert shown == {(str(s["subtask"]), s["taskmanager-id"]) for s in subtasks}
    assert page.url.endswith(f"/jobs/{job_id}/overview/{widest['id']}")  # a link to this view


def test_an_unknown_job_shows_not_found(page: Page, cluster: tuple[SessionCluster, str]) -> None:
    c, _ = cluster
    page.goto(_url(c, "jobs/" + "0" * 32))
    expect(page.locator("[data-page=job-not-found]")).to_contain_text("Job not found", timeout=WAIT_MS)


def _accepting(page: Page) -> list[str]:
    """Accept the next confirmation; returns the list its question lands in."""
    asked: list[str] = []

    def accept(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    return asked


def _savepoint_location(page: Page, what: str) -> Path:
    """The savepoint directory the notice reports, checked on disk: its _metadata was written."""
    notice = page.locator("#notice")
    expect(notice).to_contain_text(f"{what} of dashboard target completed: file://", timeout=WAIT_MS)
    location = Path(urlparse(notice.inner_text().rsplit(": ", 1)[1]).path)
    assert (location / "_metadata").is_file(), location
    return location


def test_trigger_savepoint_writes_a_savepoint_and_the_job_keeps_running(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    c, job_id = cluster
    page.goto(_url(c, f"jobs/{job_id}"))
    asked = _accepting(page)
    page.locator("[data-action=savepoint]").click(timeout=WAIT_MS)
    _savepoint_location(page, "Savepoint")
    assert asked and job_id in asked[0]
    assert c.get(f"/jobs/{job_id}")["state"] == "RUNNING"


def test_dismissing_the_cancel_confirmation_keeps_the_job_running(
    page: Page, cluster: tuple[SessionCluster, str]
) -> None:
    c, job_id = cluster
    page.goto(_url(c, f"jobs/{job_id}"))
    page.once("dialog", lambda d: d.dismiss())
    page.locator("[data-action=cancel]").click(timeout=WAIT_MS)
    page.wait_for_function(  # two refreshes after the dismissal: a cancel would have been requested by now
        "t => Number(document.getElementById('content').dataset.renderedAt) > t",
        arg=page.evaluate("Date.now()") + 2 * REFRESH_MS,
        timeout=WAIT_MS,
    )
    assert c.get(f"/jobs/{job_id}")["state"] == "RUNNING"


def test_the_cancel_button_cancels_the_job(page: Page, cluster: tuple[SessionCluster, str]) -> None:
    """Last against the cluster: the job ends here."""
    c, job_id = cluster
    page.goto(_url(c, f"jobs/{job_id}"))
    asked = _accepting(page)
    page.locator("[data-action=cancel]").click(timeout=WAIT_MS)
    expect(page.locator("[data-field=job-state]")).to_have_text("CANCELED", timeout=WAIT_MS)
    assert asked and job_id in asked[0]
    assert c.get(f"/jobs/{job_id}")["state"] == "CANCELED"
    expect(page.locator("[data-action=cancel]")).to_have_count(0)  # nothing left to cancel


def _free_slots(cluster: tuple[SessionCluster, str]) -> SessionCluster:
    """The cluster with both slots free: the tests that submit another job run after the cancel test, and a
    selection (-k) that skips it ends the first job here instead of leaving the new one without slots."""
    c, first_job = cluster
    if c.get(f"/jobs/{first_job}")["state"] not in ("CANCELED", "FINISHED", "FAILED"):
        c.cli("cancel", first_job)
    wait_until(lambda: c.get("/overview")["slots-available"] == 2, what="both slots free")
    return c


def _failing_job_file(tmp_path: Path) -> str:
    job = tmp_path / "failing_job.py"
    job.write_text(
        textwrap.dedent("""
        from strom.common import Configuration
        from strom.datastream import StreamExecutionEnvironment

        def explode(x):
            if x == 3:
                raise ValueError("record 3 is poisoned")
            return x

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.configure(Configuration({"restart-strategy.type": "none"}))
        env.from_collection(list(range(10))).map(explode).name("explode").print()
        env.execute("failing target")
        """)
    )
    return str(job)


def test_a_failed_job_shows_its_root_cause_exception(
    page: Page, cluster: tuple[SessionCluster, str], tmp_path: Path, screenshots: Path
) -> None:
    """After the cancel test: the cluster's two slots are free again."""
    c = _free_slots(cluster)
    job_id = submit(c, _failing_job_file(tmp_path))
    assert c.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED")) == "FAILED"
    root = c.get(f"/jobs/{job_id}/exceptions")["root-exception"]
    assert "record 3 is poisoned" in root
    page.goto(_url(c, f"jobs/{job_id}/exceptions"))
    expect(page.locator("[data-field=root-exception]")).to_have_text(root, timeout=WAIT_MS)
    expect(page.locator("[data-table=exception-history] tbody tr")).not_to_have_count(0)
    page.screenshot(path=screenshots / "job-exceptions.png", full_page=True)
    page.goto(_url(c, "jobs"))
    row = page.locator(f"[data-table=completed-jobs] tr[data-job-id='{job_id}']")
    expect(row.locator(".state")).to_have_text("FAILED", timeout=WAIT_MS)


def test_stop_with_savepoint_finishes_the_job_after_its_savepoint(
    page: Page, cluster: tuple[SessionCluster, str], tmp_path: Path
) -> None:
    """After the failed job: a fresh run of the streaming job takes the two slots again."""
    c = _free_slots(cluster)
    job_id = submit(c, _job_file(tmp_path))
    c.wait_for_state(job_id, ("RUNNING",))
    page.goto(_url(c, f"jobs/{job_id}"))
    _accepting(page)
    page.locator("[data-action=stop]").click(timeout=WAIT_MS)
    _savepoint_location(page, "Stop with savepoint")
    expect(page.locator("[data-field=job-state]")).to_have_text("FINISHED", timeout=WAIT_MS)
    assert c.get(f"/jobs/{job_id}")["state"] == "FINISHED"


def _slow_sink_job_file(tmp_path: Path) -> str:
    job = tmp_path / "slow_sink_job.py"
    job.write_text(
        textwrap.dedent("""
        import time
        from strom.common import WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource

        def slow(x):
            time.sleep(0.01)  # at most 100 records/s: the source offers 2000
            return None

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        numbers = env.from_source(DataGeneratorSource(lambda i: (i % 7, i), 10**12, 2000.0),
                                  WatermarkStrategy.no_watermarks(), "fast source")
        numbers.key_by(lambda e: e[0]).map(slow).name("slow sink")
        env.execute("slow sink")
        """)
    )
    return str(job)


def test_a_slow_sink_colours_its_upstream_vertex_back_pressured_high(
    page: Page, cluster: tuple[SessionCluster, str], tmp_path: Path, screenshots: Path
) -> None:
    """Last against the cluster: the source outruns the sink 20 to 1, so once the buffers between them are
    full it waits for credit most of the time (back-pressured > 500 ms/s: Flink's level high)."""
    c = _free_slots(cluster)
    job_id = submit(c, _slow_sink_job_file(tmp_path))
    try:
        c.wait_for_state(job_id, ("RUNNING",))
        details = c.get(f"/jobs/{job_id}")
        (source,) = [v for v in details["vertices"] if v["name"].startswith("Source")]
        page.goto(_url(c, f"jobs/{job_id}"))
        vertex = page.locator(f"g.vertex[data-vertex-id='{source['id']}']")
        expect(vertex).to_have_attribute("data-backpressure", "high", timeout=WAIT_MS)
        expect(vertex).to_have_attribute("data-load", "backpressured")
        level = c.get(f"/jobs/{job_id}/vertices/{source['id']}/backpressure")["backpressure-level"]
        assert level in ("high", "low")  # the REST API agrees, give or take the refresh between the two reads
        page.screenshot(path=screenshots / "job-graph-back-pressure.png", full_page=True)
    finally:
        c.cli("cancel", job_id)


# -- against a FakeJobManagerView: figures set by the test --------------------------------------

JID = JobId("b2" * 16)
SOURCE, MIDDLE, SINK = VertexId("01" * 16), VertexId("02" * 16), VertexId("03" * 16)


def _fake_view(**config: str) -> FakeJobManagerView:
    """Source -> Middle -> Sink, RUNNING; per-subtask *TimeMsPerSecond figures chosen so that the source
    is back-pressured at level high (max 800 ms/s > 500), the middle busy (max 900 > its 100 back-pressured
    and 0 idle) and the sink idle (950 idle > 50 busy)."""
    v = FakeJobManagerView()
    v.configuration.update(config)

    def vertex(vid: VertexId, name: str) -> VertexDetails:
        subtasks = tuple(SubtaskDetails(i, ExecutionState.RUNNING, "h:1", None, NOW_MS) for i in range(2))
        return VertexDetails(vid, name, 2, 128, ExecutionState.RUNNING, NOW_MS, -1, subtasks)

    v.add_job(
        JobDetails(
            JID,
            "fake job",
            JobStatus.RUNNING,
            NOW_MS,
            -1,
            128,
            {},
            (vertex(SOURCE, "Source: numbers"), vertex(MIDDLE, "Middle"), vertex(SINK, "Sink: out")),
        ),
        JobPlan(
            JID,
            "fake job",
            (
                PlanNode(SOURCE, 2, "", "", "Source: numbers"),
                PlanNode(MIDDLE, 2, "", "", "Middle", (PlanInput(0, SOURCE, "HASH"),)),
                PlanNode(SINK, 2, "", "", "Sink: out", (PlanInput(0, MIDDLE, "FORWARD"),)),
            ),
        ),
    )
    figures = {
        SOURCE: [(100, 800, 100), (400, 300, 300)],
        MIDDLE: [(900, 100, 0), (600, 0, 400)],
        SINK: [(50, 0, 950), (20, 0, 980)],
    }
    for vid, per_subtask in figures.items():
        v.metrics[(JID, vid)] = {
            i: {"busyTimeMsPerSecond": b, "backPressuredTimeMsPerSecond": p, "idleTimeMsPerSecond": idle}
            for i, (b, p, idle) in enumerate(per_subtask)
        }
    return v


def test_vertices_are_coloured_by_busy_back_pressured_and_idle_time(page: Page) -> None:
    with serving(_fake_view()) as port:
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}")
        source = page.locator(f"g.vertex[data-vertex-id='{SOURCE}']")
        expect(source).to_have_attribute("data-load", "backpressured", timeout=WAIT_MS)
        expect(source).to_have_attribute("data-backpressure", "high")
        expect(page.locator(f"g.vertex[data-vertex-id='{MIDDLE}']")).to_have_attribute("data-load", "busy")
        expect(page.locator(f"g.vertex[data-vertex-id='{MIDDLE}']")).to_have_attribute("data-backpressure", "ok")
        expect(page.locator(f"g.vertex[data-vertex-id='{SINK}']")).to_have_attribute("data-load", "idle")
        edge_labels = sorted(page.locator("svg.job-graph g.edge text").all_text_contents())
        assert edge_labels == ["FORWARD", "HASH"]
        # per subtask, /backpressure's level of backPressuredTimeMsPerSecond: 800 -> high, 300 -> low
        source.click()
        levels = page.locator("[data-panel=vertex] tr[data-subtask] td:last-child")
        expect(levels).to_have_text(["high", "low"], timeout=WAIT_MS)


def _rates(view: FakeJobManagerView, vid: VertexId, out_per_subtask: tuple[float, float]) -> None:
    for i, rate in enumerate(out_per_subtask):
        view.metrics[(JID, vid)][i]["numRecordsOutPerSecond"] = rate


def test_vertex_charts_grow_with_each_refresh_from_the_rest_figures(page: Page) -> None:
    """Records out per second is the sum over subtasks (120 + 80 = 200, then 300 + 50 = 350); busy time the
    maximum subtask (900 ms/s). The page keeps the history itself: the REST API has current values only."""
    view = _fake_view(**{"web.refresh-interval": "200"})
    _rates(view, MIDDLE, (120.0, 80.0))
    with serving(view) as port:
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}/overview/{MIDDLE}")
        out = page.locator("[data-panel=vertex] [data-chart=numRecordsOutPerSecond]")
        expect(out).to_have_attribute("data-last", "200", timeout=WAIT_MS)
        expect(page.locator("[data-chart=busyTimeMsPerSecond]")).to_have_attribute("data-last", "900")
        _rates(view, MIDDLE, (300.0, 50.0))
        expect(out).to_have_attribute("data-last", "350", timeout=WAIT_MS)
        assert int(out.get_attribute("data-points") or 0) >= 2
        assert out.locator("polyline").get_attribute("points").count(",") == int(out.get_attribute("data-points") or 0)


def test_the_job_actions_are_absent_when_web_cancel_enable_is_false(page: Page) -> None:
    view = _fake_view(**{"web.cancel.enable": "false"})
    with serving(view) as port:
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}")
        expect(page.locator(f"g.vertex[data-vertex-id='{SINK}']")).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("[data-action]")).to_have_count(0)  # cancel, savepoint, stop: job control is off
    with serving(_fake_view()) as port:  # the same job with the default shows it: the check above can fail
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}")
        expect(page.locator("[data-action=cancel]")).to_be_visible(timeout=WAIT_MS)


def test_a_failing_rest_call_shows_its_message_in_the_page(page: Page) -> None:
    """The page's own REST calls fail once the JobManager is gone: the next refresh says so, not a blank panel."""
    with serving(_fake_view(**{"web.refresh-interval": "200"})) as port:
        page.goto(f"http://127.0.0.1:{port}/#/overview")
        expect(page.locator("[data-field=taskmanagers]")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("[data-field=error]")).to_contain_text("GET /overview", timeout=WAIT_MS)


@pytest.mark.parametrize(
    ("key", "value"), [("web.refresh-interval", "soon"), ("web.refresh-interval", "10"), ("web.cancel.enable", "maybe")]
)
def test_an_invalid_dashboard_setting_is_refused_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=rf"invalid value '{value}' for '{key}'"):
        create_rest_app(_fake_view(**{key: value}))


def test_only_the_shipped_files_are_served(page: Page) -> None:
    with serving(_fake_view()) as port:
        base = f"http://127.0.0.1:{port}"
        assert page.request.get(f"{base}/web/vendor/dagre.esm.js").status == 200
        for path in ("/web/__init__.py", "/web/../rest_api.py", "/web/%2e%2e/openapi.py", "/web/missing.js"):
            assert page.request.get(base + path).status == 404, path


def _get(port: int, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def test_assets_are_gzipped_and_revalidated_by_etag() -> None:
    shipped = (Path(strom.web.__file__).parent / "vendor" / "dagre.esm.js").read_bytes()
    with serving(_fake_view()) as port:
        status, headers, body = _get(port, "/web/vendor/dagre.esm.js", {"Accept-Encoding": "gzip"})
        assert (status, headers["content-encoding"]) == (200, "gzip") and gzip.decompress(body) == shipped
        assert "default-src 'self'" in headers["content-security-policy"]
        status, _, body = _get(port, "/web/vendor/dagre.esm.js", {"If-None-Match": headers["etag"]})
        assert (status, body) == (304, b"")
        status, _, body = _get(port, "/web/vendor/dagre.esm.js", {"If-None-Match": '"stale"'})
        assert (status, body) == (200, shipped)  # another version's tag: the whole file


def test_the_vertex_load_rule_matches_hand_worked_cases(page: Page) -> None:
    """dag.js's vertexLoad, imported in the browser: the largest of busy / back-pressured / idle wins;
    the back-pressure level uses Flink's thresholds (ok <= 0.10 < low <= 0.50 < high)."""
    with serving(_fake_view()) as port:
        page.goto(f"http://127.0.0.1:{port}/#/overview")
        cases = [  # (busy, back-pressured, idle) ms/s -> (kind, back-pressure level)
            (None, ["unknown", "unknown"]),
            ((0, 0, 1000), ["idle", "ok"]),
            ((300, 100, 600), ["idle", "ok"]),
            ((450, 450, 100), ["backpressured", "low"]),
            ((700, 300, 0), ["busy", "low"]),
            ((0, 501, 0), ["backpressured", "high"]),
        ]
        got = page.evaluate(
            """async cases => {
                const { vertexLoad } = await import('/web/dag.js');
                const names = ['busyTimeMsPerSecond', 'backPressuredTimeMsPerSecond', 'idleTimeMsPerSecond'];
                return cases.map(([f]) => {
                    const l = vertexLoad(f ? Object.fromEntries(names.map((n, i) => [n, f[i]])) : {});
                    return [l.kind, l.level];
                });
            }""",
            cases,
        )
        assert got == [expected for _, expected in cases]
