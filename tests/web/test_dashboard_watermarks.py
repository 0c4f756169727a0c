"""The vertex panel's watermarks against hand-set figures of a FakeJobManagerView.

The REST API carries current values only; the page charts the lowest input watermark's lag behind the
wall clock and lists each subtask's watermark as /jobs/:id/vertices/:vid/watermarks says it.
"""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page, expect

from tests.engine.fake_jobmanager_view import serving
from tests.web.test_dashboard import JID, MIDDLE, SOURCE, WAIT_MS, _fake_view

LONG_MIN = -(2**63)


def test_the_low_watermark_lag_is_charted_from_the_lowest_subtask_watermark(page: Page) -> None:
    """Subtask watermarks 90 s and 30 s behind now: the vertex's is the lower, so its lag is 90 s (plus the
    seconds the page takes to show it; the deadline bounds those)."""
    view = _fake_view(**{"web.refresh-interval": "200"})
    now_ms = int(time.time() * 1000)
    for i, behind_ms in enumerate((90_000, 30_000)):
        view.metrics[(JID, MIDDLE)][i]["currentInputWatermark"] = float(now_ms - behind_ms)
    with serving(view) as port:
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}/overview/{MIDDLE}")
        lag = page.locator("[data-panel=vertex] [data-chart=watermarkLag]")
        expect(lag).to_have_attribute("data-points", re.compile(r"[1-9]\d*"), timeout=WAIT_MS)  # charted at least once
        shown = float(lag.get_attribute("data-last") or "nan")
        assert 90 <= shown < 90 + 2 * WAIT_MS / 1000  # the seconds since `now_ms`, bounded by the waits
        cells = page.locator("[data-table=watermarks] tr[data-watermark-subtask] td:last-child")
        assert [c.get_attribute("data-value") for c in cells.all()] == [str(now_ms - 90_000), str(now_ms - 30_000)]


def test_a_subtask_without_a_watermark_shows_none_and_nothing_is_charted(page: Page) -> None:
    """One subtask at Long.MIN_VALUE: the vertex has no watermark yet (its timers wait for the lowest)."""
    view = _fake_view(**{"web.refresh-interval": "200"})
    view.metrics[(JID, SOURCE)][0]["currentInputWatermark"] = float(LONG_MIN)
    view.metrics[(JID, SOURCE)][1]["currentInputWatermark"] = float(int(time.time() * 1000))
    with serving(view) as port:
        page.goto(f"http://127.0.0.1:{port}/#/jobs/{JID}/overview/{SOURCE}")
        expect(page.locator("[data-table=watermarks] tr[data-watermark-subtask='0'] td:last-child")).to_have_text(
            "No watermark", timeout=WAIT_MS
        )
        expect(page.locator("[data-field=low-watermark]")).to_have_text(" (no watermark yet)")
        assert page.locator("[data-chart=watermarkLag]").get_attribute("data-points") == "0"


def test_watermarks_of_an_unknown_vertex_are_not_found(page: Page) -> None:
    with serving(_fake_view()) as port:
        answer = page.request.get(f"http://127.0.0.1:{port}/jobs/{JID}/vertices/{'0' * 32}/watermarks")
        assert answer.status == 404
