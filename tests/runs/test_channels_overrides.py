"""The inspector sockets' hot path: no per-message connection-close hop (runs.channels_dispatch)
and one shared session re-read per session (runs.consumers.SessionRechecks).

The first test fails when channels' own dispatch changes (the override then needs a look: it
may be redundant, or mirror something that moved); the others pin what the override does.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest
from channels import consumer as channels_consumer
from channels.consumer import AsyncConsumer

from runs import consumers
from runs.channels_dispatch import DispatchWithoutConnectionHop
from runs.consumers import IngestConsumer, RunConsumer, RunListConsumer
from runs.errors import Unauthorized
from tests.support.loops import in_own_loop


class Probe(AsyncConsumer):
    handled: list[dict]

    async def run_event(self, message: dict) -> None:
        self.handled.append(message)


class FastProbe(DispatchWithoutConnectionHop, Probe):
    pass


def test_channels_dispatch_still_closes_connections_before_each_handler():
    source = inspect.getsource(AsyncConsumer.dispatch)
    assert "aclose_old_connections()" in source
    assert "get_handler_name(message)" in source
    assert channels_consumer.get_handler_name({"type": "run.event"}) == "run_event"


@pytest.mark.parametrize(("probe", "hops"), [(Probe, 1), (FastProbe, 0)])
@in_own_loop
async def test_the_override_hands_messages_on_without_the_hop(monkeypatch, probe, hops):
    calls: list[int] = []

    async def counted_close() -> None:
        calls.append(1)

    monkeypatch.setattr(channels_consumer, "aclose_old_connections", counted_close)
    instance = probe()
    instance.handled = []
    await instance.dispatch({"type": "run.event", "seq": 1})
    assert instance.handled == [{"type": "run.event", "seq": 1}]
    assert len(calls) == hops


@in_own_loop
async def test_an_unknown_message_type_is_still_refused():
    instance = FastProbe()
    instance.handled = []
    with pytest.raises(ValueError, match=r"No handler for message type run\.nothing"):
        await instance.dispatch({"type": "run.nothing"})


@pytest.mark.parametrize("consumer", [RunConsumer, RunListConsumer, IngestConsumer])
def test_every_project_consumer_uses_it(consumer):
    assert consumer.dispatch is DispatchWithoutConnectionHop.dispatch


@in_own_loop
async def test_sockets_of_one_session_share_one_recent_session_read(monkeypatch):
    reads: list[str | None] = []
    lost: set[str] = set()

    def staff_session_check(*, session_key: str | None) -> None:
        reads.append(session_key)
        if session_key in lost:
            raise Unauthorized("session: gone")

    monkeypatch.setattr(consumers, "staff_session_check", staff_session_check)
    rechecks = consumers.SessionRechecks()
    await asyncio.gather(*(rechecks.check(session_key="a") for _ in range(50)))
    await rechecks.check(session_key="b")
    assert reads == ["a", "b"]  # fifty sockets of session a: one read
    lost.add("a")
    await asyncio.sleep(consumers.SESSION_SHARED_S)
    for _ in range(2):
        with pytest.raises(Unauthorized):
            await rechecks.check(session_key="a")
    assert reads == ["a", "b", "a"]
