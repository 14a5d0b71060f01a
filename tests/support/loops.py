"""Run an async test on a fresh event loop in a thread of its own.

The session's sync Playwright (devservers/browser.py) can leave its loop marked running in
the main thread, and pytest-asyncio then cannot start one there ("Runner.run() cannot be called
from a running event loop"). Pure asyncio unit tests that need no Django database use this.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def in_own_loop(scenario: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """Wrap ``async def test_...`` as a sync test running it with ``asyncio.run`` in a thread."""

    @functools.wraps(scenario)
    def test(*args: Any, **kwargs: Any) -> None:
        run_in_own_loop(scenario(*args, **kwargs))

    return test


def run_in_own_loop(coroutine: Any) -> Any:
    """Run a coroutine to its end with ``asyncio.run`` in a thread of its own (see above)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
