"""A headless Chromium (Debian's `chromium`, driven by Playwright's Python API) for the dashboard tests.

Playwright cannot download its own browsers here, so it drives the system browser by `executable_path`.
Without one the tests skip with the reason, except under CI=true, where a missing browser is a failure
(.ci/run installs the `chromium` package). Screenshots go to $STROM_TEST_ARTIFACTS/web when that is set
(CI keeps them), else to pytest's temporary directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def system_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


# module scope, not session: while sync Playwright is open it holds an asyncio loop running in the main
# thread, so every later test that runs its own loop (asyncio.run, the e2e platform) would fail
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = system_chromium()
    if executable is None:
        reason = "no system Chromium (apt-get install chromium): the dashboard's browser tests cannot run"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    with sync_playwright() as p:
        # --no-sandbox: CI runs as root, where Chromium refuses its sandbox
        b = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page; a script error in the dashboard fails the test that caused it."""
    context = browser.new_context()
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield p
    finally:
        context.close()
    assert not errors, f"the dashboard raised in the browser: {errors}"


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = os.environ.get("STROM_TEST_ARTIFACTS")
    folder = Path(root) / "web" if root else tmp_path_factory.mktemp("dashboard-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
