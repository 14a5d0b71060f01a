"""Broadcasts after commit: run events to the run's inspectors, run changes to the runs list.

A broadcast is best-effort: the event log is the truth and inspectors refill any gap from it by
seq (docs/reliability.md). So a broadcast is bounded in time, and after one fails the process
skips broadcasts for a short pause instead of holding up every ingest on a dead layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from runs import selectors
from runs.messages import run_message
from runs.models import Run, RunEvent

logger = logging.getLogger(__name__)

RUNS_GROUP = "runs"
BROADCAST_TIMEOUT_S = 1.0  # a broadcast never holds up an ingest answer longer than this
BROADCAST_PAUSE_S = 2.0  # after a failed one, skip broadcasts this long (docs/reliability.md)

Send = tuple[str, dict[str, Any]]


def run_group(run_id: str) -> str:
    """Name the channel-layer group of one run's inspectors."""
    return f"run.{run_id}"


class Breaker:
    """Open for ``pause_s`` after a failure: while open, broadcasts are skipped."""

    def __init__(self, *, pause_s: float) -> None:
        self.pause_s = pause_s
        self._open_until = 0.0

    def is_open(self) -> bool:
        return time.monotonic() < self._open_until

    def trip(self) -> None:
        self._open_until = time.monotonic() + self.pause_s


breaker = Breaker(pause_s=BROADCAST_PAUSE_S)

_collected: ContextVar[list[Send] | None] = ContextVar("collected_broadcasts", default=None)


@contextlib.contextmanager
def broadcasts_collected() -> Iterator[list[Send]]:
    """Within it, broadcasts made after commit are collected instead of sent, for an async
    caller to send with ``broadcasts_send`` once its worker thread returns: sending from the
    worker thread would cost a hop into the event loop and back."""
    collected: list[Send] = []
    token = _collected.set(collected)
    try:
        yield collected
    finally:
        _collected.reset(token)


def runs_list_merged(sends: list[Send]) -> list[Send]:
    """One runs-list message for all of ``sends``' run changes (the latest of each run), last:
    a group commit of many runs sends one group message to the runs list, not one per run."""
    changes: dict[str, str] = {}
    kept: list[Send] = []
    for group, message in sends:
        if group == RUNS_GROUP and message.get("type") == "runs.run":
            for run_id, text in zip(message["run_ids"], message["texts"], strict=True):
                changes.pop(run_id, None)
                changes[run_id] = text
        else:
            kept.append((group, message))
    if changes:
        runs = {"type": "runs.run", "run_ids": list(changes), "texts": list(changes.values())}
        kept.append((RUNS_GROUP, runs))
    return kept


async def broadcasts_send(sends: list[Send]) -> None:
    """Send group messages in order (the runs list's merged into one, last), each bounded by
    BROADCAST_TIMEOUT_S; never raises."""
    layer = get_channel_layer()
    if not sends or layer is None or breaker.is_open():
        return
    sends = runs_list_merged(sends)
    group = sends[0][0]
    try:
        for group, message in sends:
            # asyncio.timeout, not wait_for: wait_for runs the send as a task of its own.
            async with asyncio.timeout(BROADCAST_TIMEOUT_S):
                await layer.group_send(group, message)
    except Exception as exc:  # the log is the truth: inspectors resync from it by seq
        breaker.trip()
        # One line each (at most one per pause): a Redis outage is not a bug with a traceback;
        # DEBUG logging keeps the traceback for a layer that fails for another reason.
        reason = (str(exc).strip().splitlines() or [""])[0] or type(exc).__name__
        logger.error(
            "broadcast to %s failed (%s); inspectors will resync from the log", group, reason,
            exc_info=logger.isEnabledFor(logging.DEBUG),
        )


def _sends_dispatch(sends: list[Send]) -> None:
    """Hand sends to the collecting async caller, or send them from this (sync) thread."""
    collected = _collected.get()
    if collected is not None:
        collected.extend(sends)
    elif get_channel_layer() is not None and not breaker.is_open():
        async_to_sync(broadcasts_send)(sends)


def runs_list_send(run: Run, *, flags: list[str] | None = None) -> Send:
    """The runs list's message for a run that started or changed."""
    summary = selectors.run_summary(run=run, flags=flags)
    text = run_message(summary=summary)
    return RUNS_GROUP, {"type": "runs.run", "run_ids": [run.pk], "texts": [text]}


def run_started_broadcast(run: Run) -> None:
    """After commit, tell the runs list about a new run."""
    transaction.on_commit(lambda: _sends_dispatch([runs_list_send(run)]))


def run_events_committed(
    sender: Any,
    *,
    run: Run,
    events: list[RunEvent],
    messages: list[tuple[int, str]],
    flags: list[str],
    **kwargs: Any,
) -> None:
    """Receive ``runs.signals.events_committed``: send a batch's event messages to the run's
    inspectors (one group message) and the run's new summary, with the ``flags`` now on and
    its last event's time (a row new to a page would otherwise read as silent since its start,
    and stale), to the runs list."""
    if events:
        run.last_event_at = events[-1].received_at  # type: ignore[attr-defined]
    group_message = {"type": "run.events", "items": messages}
    _sends_dispatch([(run_group(run.pk), group_message), runs_list_send(run, flags=flags)])
