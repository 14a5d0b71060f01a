"""After a browser test, the tests that follow it in the same worker run as if it had not:
devservers.browser sets the session's Playwright loop aside (``playwright_loop_aside``).
Checked in a pytest of its own, so the order of its tests is fixed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from devservers.processes import PROJECT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ORDERED = '''
import asyncio

from asgiref.sync import async_to_sync
from django.utils.asyncio import async_unsafe


def test_1_browser(chromium):
    page = chromium.new_page()
    page.set_content("<p>one</p>")
    assert page.text_content("p") == "one"
    page.close()


async def test_2_an_async_test_after_it():
    await asyncio.sleep(0)


def test_3_sync_code_after_it():
    async def one():
        return 1

    assert async_to_sync(one)() == 1
    assert async_unsafe(lambda: "a database call")() == "a database call"


def test_4_the_browser_again(chromium):
    page = chromium.new_page()
    page.set_content("<p>four</p>")
    assert page.text_content("p") == "four"
    page.close()
'''

WITHOUT = '''
import pytest


@pytest.fixture(autouse=True)
def playwright_loop_aside():  # the plugin's, overridden: the mark stays
    yield
'''


def _ordered(tmp_path: Path, *, aside: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_ordered.py").write_text(ORDERED)
    if not aside:
        (tmp_path / "conftest.py").write_text(WITHOUT)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "devservers.browser", "-p", "no:django",
         "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "asyncio_mode=auto", "-q",
         "--rootdir", str(tmp_path), str(tmp_path / "test_ordered.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}"},
    )


def test_tests_after_a_browser_test_start_loops_and_call_sync_code(tmp_path: Path) -> None:
    done = _ordered(tmp_path, aside=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 passed" in done.stdout, done.stdout[-3000:]


def test_without_setting_the_loop_aside_they_fail(tmp_path: Path) -> None:
    done = _ordered(tmp_path, aside=False)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 failed, 2 passed" in done.stdout, done.stdout[-3000:]
    assert "cannot be called from a running event loop" in done.stdout
    assert "You cannot use AsyncToSync in the same thread as an async event loop" in done.stdout
