"""Debian Chromium for Playwright: the flags that let it run headless, as root, offline."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Debian Chromium for the session (one sync Playwright per thread at most)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(autouse=True)
def playwright_loop_aside(request: pytest.FixtureRequest) -> Iterator[None]:
    """Unmark the session's Playwright loop during every test that does not use the browser.

    Playwright's sync API leaves its event loop marked running in this thread after each call
    (``asyncio._set_running_loop``, so that it can refuse to be used inside a loop). A later
    test in the same worker would then find a "running" loop that runs nothing: pytest-asyncio
    could not start its own, ``async_to_sync`` would refuse, and Django would take every new
    database connection for async code. Between browser calls nothing runs on that loop, so
    the mark is set aside for the test and put back after it, for the next browser test, with
    the pair of low-level functions asyncio exports for this (``asyncio.__all__``) and
    Playwright itself calls. tests/test_browser_loop_aside.py fails when either side moves.
    """
    marked = asyncio._get_running_loop()
    if marked is None or "chromium" in request.fixturenames:
        yield
        return
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(marked)
