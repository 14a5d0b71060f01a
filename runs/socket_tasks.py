"""The coroutines a socket runs beside its messages while it is open (the run stream's resync
timer, the inspector's session watch): each is stopped with its socket, and awaited as it
stops, so none outlives the socket or leaves a "task was destroyed" warning behind."""

from __future__ import annotations

import asyncio
import contextlib


async def task_stop(task: asyncio.Task[None] | None) -> None:
    """Cancel ``task`` and wait until it has ended (None: nothing runs)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
