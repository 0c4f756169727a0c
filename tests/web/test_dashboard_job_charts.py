"""The job page's own charts against hand-set figures of a FakeJobManagerView (see test_dashboard._fake_view).

Throughput is what the sources emit: numRecordsOutPerSecond summed over the subtasks of the vertices
without inputs (only "Source: numbers": 120 + 80 = 200; the middle vertex's 1,000 must not count).
Busy and back-pressured time are the worst subtask of the worst vertex: busy max(100, 400, 900, 600,
50, 20) = 900 (the middle), back-pressured max(800, 300, 100, 0, 0, 0) = 800 (the source).
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.engine.fake_jobmanager_view import serving
from tests.web.test_dashboard import JID, MIDDLE, SOURCE, WAIT_MS, _fake_view, _rates


def test_job_charts_follow_the_sources_throughput_and_the_worst_vertex(page: Page, screenshots: Path) -> None:
    view = _fake_view(**{"web.refresh-interval": "200"})
    _rates(view, SOURCE, (120.0, 80.0))
    _rates(view, MIDDLE, (600.0, 400.0))
    with serving(view) as port:
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}")
        charts = page.locator("[data-panel=job-charts]")
        throughput = charts.locator("[data-chart=job-throughput]")
        expect(throughput).to_have_attribute("data-last", "200", timeout=WAIT_MS)
        expect(charts.locator("[data-chart=job-busy]")).to_have_attribute("data-last", "900")
        expect(charts.locator("[data-chart=job-backpressured]")).to_have_attribute("data-last", "800")
        _rates(view, SOURCE, (300.0, 50.0))
        expect(throughput).to_have_attribute("data-last", "350", timeout=WAIT_MS)
        assert int(throughput.get_attribute("data-points") or 0) >= 2
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}/overview/{SOURCE}")  # the vertex panel under the charts
        expect(page.locator("[data-table=watermarks]")).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=screenshots / "job-charts.png", full_page=True)
