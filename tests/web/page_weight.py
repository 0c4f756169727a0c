"""Page weight and load time of a 20-vertex job page, measured (never asserted): `python -m tests.web.page_weight`.

A FakeJobManagerView serves a chain of 20 vertices (parallelism 4, metrics on every subtask) through the
real REST app; headless Chromium (a fresh context: empty cache) opens the job page, and the figures are
taken when all 20 vertices are drawn: bytes over the wire (the Resource Timing API's transferSize, gzip
included) and decoded, requests, and the time from navigation start. Repeated loads reuse the cache
(ETag revalidation: 304s).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from playwright.sync_api import sync_playwright
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

from tests.engine.fake_jobmanager_view import NOW_MS, FakeJobManagerView, serving
from tests.web.conftest import system_chromium

JID = JobId("c3" * 16)
VERTICES = 20
PARALLELISM = 4

_FIGURES = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const all = [nav, ...res];
  return {
    requests: all.length,
    transferred: all.reduce((n, e) => n + e.transferSize, 0),
    decoded: all.reduce((n, e) => n + e.decodedBodySize, 0),
    assets_transferred: all.filter((e) => e === nav || e.name.includes('/web/'))
      .reduce((n, e) => n + e.transferSize, 0),
    drawn_ms: performance.now(),
    dom_content_loaded_ms: nav.domContentLoadedEventEnd,
  };
}"""


def twenty_vertex_view() -> FakeJobManagerView:
    view = FakeJobManagerView()
    ids = [VertexId(f"{i:032x}") for i in range(1, VERTICES + 1)]
    subtasks = tuple(SubtaskDetails(i, ExecutionState.RUNNING, "h:1", None, NOW_MS) for i in range(PARALLELISM))
    vertices = tuple(
        VertexDetails(vid, f"Vertex {i}: map", PARALLELISM, 128, ExecutionState.RUNNING, NOW_MS, -1, subtasks)
        for i, vid in enumerate(ids)
    )
    nodes = tuple(
        PlanNode(vid, PARALLELISM, "", "", f"Vertex {i}: map", (PlanInput(0, ids[i - 1], "HASH"),) if i else ())
        for i, vid in enumerate(ids)
    )
    view.add_job(JobDetails(JID, "twenty vertices", JobStatus.RUNNING, NOW_MS, -1, 128, {}, vertices),
                 JobPlan(JID, "twenty vertices", nodes))
    for vid in ids:
        view.metrics[(JID, vid)] = {
            i: {"busyTimeMsPerSecond": 300.0, "backPressuredTimeMsPerSecond": 100.0, "idleTimeMsPerSecond": 600.0,
                "numRecordsInPerSecond": 1000.0, "numRecordsOutPerSecond": 1000.0}
            for i in range(PARALLELISM)
        }
    return view


def measure(loads: int = 5) -> dict[str, object]:
    executable = system_chromium()
    if executable is None:
        sys.exit("no system Chromium (apt-get install chromium)")
    cold, warm = [], []
    with serving(twenty_vertex_view()) as port, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        try:
            for _ in range(loads):
                context = browser.new_context()  # empty cache: a first load
                page = context.new_page()
                for sample in (cold, warm):
                    started = time.perf_counter()
                    page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}")
                    page.locator("svg.job-graph g.vertex").nth(VERTICES - 1).wait_for(timeout=30_000)
                    figures = page.evaluate(_FIGURES)
                    figures["wall_ms"] = (time.perf_counter() - started) * 1000
                    sample.append(figures)
                    page.goto("about:blank")
                context.close()
        finally:
            browser.close()

    def summary(samples: list[dict[str, float]]) -> dict[str, float]:
        return {k: round(statistics.median(s[k] for s in samples), 1) for k in samples[0]}

    return {"vertices": VERTICES, "parallelism": PARALLELISM, "loads": loads,
            "first_load": summary(cold), "reload_same_context": summary(warm)}


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
