"""runs.batching.IngestBatcher on its own: group commit, replies in frame order, a failed batch
replayed event by event, close after a refusal, nothing sent after a disconnect."""

from __future__ import annotations

import asyncio
from typing import Any

from contextadmin.errors import BadRequest
from runs.batching import IngestBatcher


class Socket:
    def __init__(self, *, delay: float = 0.0, bad: frozenset[Any] = frozenset()) -> None:
        self.batches: list[list[Any]] = []
        self.sent: list[dict[str, Any]] = []
        self.closed: list[int] = []
        self.delay = delay
        self.bad = bad

    async def ingest(self, events: list[Any]) -> list[dict[str, Any]]:
        await asyncio.sleep(self.delay)  # a commit takes time: frames queue meanwhile
        if any(event in self.bad for event in events):
            raise BadRequest(f"events[0]: bad event {events[0]}")
        self.batches.append(events)
        return [{"type": "ack", "seq": event} for event in events]

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def close(self, code: int) -> None:
        self.closed.append(code)

    def batcher(self, limit: int = 100) -> IngestBatcher:
        return IngestBatcher(
            ingest=self.ingest, send=self.send, close=self.close, limit=limit, name="t"
        )


async def test_events_that_queue_during_a_commit_are_one_batch_and_acked_in_order():
    socket = Socket(delay=0.02)
    batcher = socket.batcher()
    batcher.event(1)
    await asyncio.sleep(0)  # an idle socket's event is ingested at once...
    for event in range(2, 11):  # ...and what arrives while it commits waits for the next batch
        batcher.event(event)
    await batcher.flushed()
    assert socket.batches == [[1], [2, 3, 4, 5, 6, 7, 8, 9, 10]]
    assert [m["seq"] for m in socket.sent] == list(range(1, 11))


async def test_a_batch_holds_at_most_limit_events():
    socket = Socket()
    batcher = socket.batcher(limit=4)
    for event in range(1, 11):
        batcher.event(event)
    await batcher.flushed()
    assert [len(batch) for batch in socket.batches] == [4, 4, 2]
    assert [m["seq"] for m in socket.sent] == list(range(1, 11))


async def test_a_failed_batch_is_replayed_one_event_at_a_time_errors_in_order():
    socket = Socket(bad=frozenset({3}))
    batcher = socket.batcher()
    for event in range(1, 6):
        batcher.event(event)
    await batcher.flushed()
    kinds = [(m["type"], m.get("seq")) for m in socket.sent]
    assert kinds == [("ack", 1), ("ack", 2), ("error", None), ("ack", 4), ("ack", 5)]
    assert socket.sent[2]["status"] == 400 and "bad event 3" in socket.sent[2]["error"]


async def test_a_reply_keeps_its_place_and_a_close_ends_the_socket():
    socket = Socket()
    batcher = socket.batcher()
    batcher.event(1)
    batcher.reply({"type": "error", "error": "message: not valid JSON"})
    batcher.event(2)
    batcher.reply({"type": "error", "error": "revoked"}, close=4401)
    batcher.event(3)  # after the close: never taken
    assert batcher.closing
    await batcher.flushed()
    assert [m.get("seq", m.get("error")) for m in socket.sent] == [
        1, "message: not valid JSON", 2, "revoked"
    ]
    assert socket.closed == [4401]


async def test_after_a_disconnect_queued_events_are_ingested_but_nothing_is_sent():
    socket = Socket(delay=0.02)
    batcher = socket.batcher()
    batcher.event(1)
    batcher.event(2)
    await batcher.drain()
    assert [e for batch in socket.batches for e in batch] == [1, 2]
    assert socket.sent == []


async def test_an_unexpected_failure_closes_the_socket_with_1011():
    async def broken(events: list[Any]) -> list[dict[str, Any]]:
        raise RuntimeError("disk on fire")

    socket = Socket()
    batcher = IngestBatcher(
        ingest=broken, send=socket.send, close=socket.close, limit=10, name="t"
    )
    batcher.event(1)
    await batcher.flushed()
    assert socket.closed == [1011]
