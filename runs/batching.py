"""Ingest batching, in two plain asyncio classes and the wiring between them.

``IngestBatcher`` (one per ingest socket): frames queue; one flush task ingests what has
queued, in order, as one batch. Under load a batch holds every event that arrived while the
previous one was committing; an idle socket's event is ingested at once. Replies (acks and
errors) go out in the order the frames came, exactly as if each event were ingested on its
own: a batch that fails is re-run one event at a time, so only the bad event gets the error.
A batch frame (``{"events": [...]}``, what ``RunReporter`` sends) is the events POST's body:
stored all or nothing and answered by one message, in its place among the replies.

``GroupCommitter`` (one per process's event loop): the sockets' batches that arrive while one
commit runs share the next transaction, across runs (``event_ingest_grouped``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from contextadmin.errors import ApiError
from runs.db import pool_sync_to_async
from runs.messages import Message, error_message
from runs.models import ApiToken
from runs.services import ingest
from runs.services.broadcast import broadcasts_collected, broadcasts_send

logger = logging.getLogger(__name__)

CLOSE_INTERNAL_ERROR = 1011


class IngestBatcher:
    """Queue a socket's events and replies; ingest queued events in batches, in order.

    ``ingest(events)`` stores a batch and returns one ack per event, or raises ApiError having
    stored nothing; ``ingest_whole(events)`` stores a batch frame's events and returns its one
    answer (or raises likewise). ``send(message)`` and ``close(code)`` reach the socket.

    Frames are taken as fast as they come (Daphne has no back-pressure), so what is queued and
    not yet ingested is counted in bytes: ``room_for(size)`` says whether a frame fits in
    ``max_queued_bytes`` (0: no limit), for the socket to refuse a client that does not wait
    for its acks instead of holding everything it sends in memory.
    """

    def __init__(
        self,
        *,
        ingest: Callable[[list[Any]], Awaitable[list[Message]]],
        send: Callable[[Message], Awaitable[None]],
        close: Callable[[int], Awaitable[None]],
        limit: int,
        name: str = "",
        ingest_whole: Callable[[Any], Awaitable[Message]] | None = None,
        max_queued_bytes: int = 0,
    ) -> None:
        self._ingest = ingest
        self._ingest_whole = ingest_whole
        self._send = send
        self._close = close
        self._limit = max(1, limit)
        self._name = name
        self._queue: deque[tuple[str, Any, int]] = deque()  # kind, value, its frame's bytes
        self._max_queued_bytes = max_queued_bytes
        self.queued_bytes = 0  # of the frames queued and not yet ingested
        self._flusher: asyncio.Task[None] | None = None
        self.closing = False  # a close is queued: nothing more is taken
        self.disconnected = False  # the socket is gone: replies are dropped

    def room_for(self, size: int) -> bool:
        """Whether a frame of ``size`` bytes fits beside what is queued (always, alone)."""
        limit = self._max_queued_bytes
        return not limit or not self.queued_bytes or self.queued_bytes + size <= limit

    def event(self, event: Any, *, size: int = 0) -> None:
        """Queue an event (of a frame of ``size`` bytes) for the next batch."""
        self._enqueue("event", event, size)

    def batch(self, events: Any, *, size: int = 0) -> None:
        """Queue a batch frame's events: stored all or nothing, answered by one message."""
        self._enqueue("batch", events, size)

    def reply(self, message: Message, *, close: int | None = None) -> None:
        """Queue a reply (in frame order), then optionally a close: nothing after it is taken."""
        self._enqueue("send", message)
        if close is not None:
            self._enqueue("close", close)
            self.closing = True

    async def flushed(self) -> None:
        """Wait until everything queued so far is handled."""
        while self._flusher is not None and not self._flusher.done():
            await self._flusher

    async def drain(self) -> None:
        """Wait until what was queued is ingested (replies to a gone socket are dropped)."""
        self.disconnected = True
        if self._flusher is not None:
            with contextlib.suppress(Exception):
                await self._flusher

    def _enqueue(self, kind: str, value: Any, size: int = 0) -> None:
        if self.closing:
            return
        self._queue.append((kind, value, size))
        self.queued_bytes += size
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self._queue:
                kind, value, _ = self._queue[0]
                if kind == "send":
                    self._queue.popleft()
                    await self._reply(value)
                elif kind == "close":
                    self._queue.clear()
                    self.queued_bytes = 0
                    await self._close(value)
                elif kind == "batch":
                    size = self._queue.popleft()[2]
                    try:
                        await self._whole_ingest(value)
                    finally:
                        self.queued_bytes -= size
                else:
                    batch, size = [], 0
                    while self._queue and self._queue[0][0] == "event" and len(batch) < self._limit:
                        _, event, frame_bytes = self._queue.popleft()
                        batch.append(event)
                        size += frame_bytes
                    try:
                        await self._batch_ingest(batch)
                    finally:
                        self.queued_bytes -= size
        except Exception:  # as an unhandled error in a consumer: log it, close the socket
            logger.exception("ingest socket %s failed", self._name)
            self._queue.clear()
            self.queued_bytes = 0
            with contextlib.suppress(Exception):
                await self._close(CLOSE_INTERNAL_ERROR)

    async def _batch_ingest(self, events: list[Any]) -> None:
        """Ingest a batch and ack each event; if it fails, ingest its events one by one."""
        try:
            acks = await self._ingest(events)
        except ApiError as exc:
            if len(events) > 1:
                for event in events:  # the batch stored nothing: replay it event by event
                    await self._batch_ingest([event])
                return
            await self._reply(error_message(exc))
            return
        for ack in acks:
            await self._reply(ack)

    async def _whole_ingest(self, events: Any) -> None:
        """A batch frame: one answer, the batch's acknowledgement or the error that refused it."""
        assert self._ingest_whole is not None, "batch frames need ingest_whole"
        try:
            answer = await self._ingest_whole(events)
        except ApiError as exc:
            answer = error_message(exc)
        await self._reply(answer)

    async def _reply(self, message: Message) -> None:
        if not self.disconnected:  # the runtime re-sends unacked events
            await self._send(message)


class GroupCommitter:
    """A process's ingest sockets commit together: the batches that arrive while one commit
    runs go in the next, in arrival order (a group commit across runs).

    One run live at a time commits exactly as before; a thousand runs at one event a second
    each share one transaction per round instead of paying one each, so the commit rate keeps
    up with the sockets (docs/benchmarks.md, B11). ``commit(requests)`` answers each request
    in order; ``submit`` returns that answer to the request's caller. A round holds at most
    ``max_size`` (the sum of the requests' sizes), and always at least one request.
    """

    def __init__(
        self, *, commit: Callable[[list[Any]], Awaitable[list[Any]]], max_size: int
    ) -> None:
        self._commit = commit
        self._max_size = max(1, max_size)
        self._pending: deque[tuple[Any, int, asyncio.Future[Any]]] = deque()
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, request: Any, *, size: int = 1) -> Any:
        """Queue ``request`` for the next round and return its answer."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((request, size, answer))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        return await answer

    async def _flush(self) -> None:
        while self._pending:
            group, total = [], 0
            while self._pending and (not group or total + self._pending[0][1] <= self._max_size):
                item = self._pending.popleft()
                if not item[2].done():  # its caller is gone (cancelled): nothing to commit
                    group.append(item)
                    total += item[1]
            if not group:
                continue
            try:
                answers = await self._commit([request for request, _, _ in group])
            except Exception as exc:  # every caller of the round gets the error
                for _, _, answer in group:
                    if not answer.done():
                        answer.set_exception(exc)
                continue
            for (_, _, future), result in zip(group, answers, strict=True):
                if not future.done():
                    future.set_result(result)


_committers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupCommitter] = (
    weakref.WeakKeyDictionary()
)
GROUP_COMMIT_MAX_EVENTS = 2_000  # a round's events at most (one batch may be API_MAX_...)


async def event_ingest_grouped(
    *, run_id: str, events: Any, token: ApiToken | None = None
) -> ingest.IngestResult:
    """``event_ingest`` from async code (the ingest sockets and the events POST), in this
    process's next group commit; what it committed is broadcast from the event loop before it
    returns."""
    loop = asyncio.get_running_loop()
    committer = _committers.get(loop)
    if committer is None:
        committer = _committers[loop] = GroupCommitter(
            commit=_group_commit_async, max_size=GROUP_COMMIT_MAX_EVENTS
        )
    size = len(events) if isinstance(events, list) else 1
    request = ingest.IngestRequest(run_id=run_id, events=events, token=token)
    outcome = await committer.submit(request, size=size)
    if isinstance(outcome, Exception):  # refused (ApiError) or failed alone (DatabaseError)
        raise outcome
    result: ingest.IngestResult = outcome
    return result


async def _group_commit_async(requests: list[ingest.IngestRequest]) -> list[ingest.Outcome]:
    """One round: commit in the thread pool, then broadcast what it committed from the loop."""
    with broadcasts_collected() as sends:
        outcomes = await pool_sync_to_async(ingest.events_ingest_many)(requests=requests)
    await broadcasts_send(sends)
    return outcomes
