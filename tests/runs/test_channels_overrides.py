"""The channels overrides (runs.channels_overrides): no per-message connection-close hop, and
an in-memory layer swept once a second; and one shared re-read per session or token
(runs.consumers.SharedReads).

The first test fails when channels' own dispatch changes (the override then needs a look: it
may be redundant, or mirror something that moved); the others pin what the override does.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest
from channels import consumer as channels_consumer
from channels.consumer import AsyncConsumer
from django.conf import settings

from contextadmin.errors import Unauthorized
from runs import consumers
from runs.channels_overrides import DispatchWithoutConnectionHop, SweptInMemoryChannelLayer
from runs.consumers import IngestConsumer, RunConsumer, RunListConsumer


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


async def test_an_unknown_message_type_is_still_refused():
    instance = FastProbe()
    instance.handled = []
    with pytest.raises(ValueError, match=r"No handler for message type run\.nothing"):
        await instance.dispatch({"type": "run.nothing"})


@pytest.mark.parametrize("consumer", [RunConsumer, RunListConsumer, IngestConsumer])
def test_every_project_consumer_uses_it(consumer):
    assert consumer.dispatch is DispatchWithoutConnectionHop.dispatch


@pytest.mark.django_db  # channels' database_sync_to_async checks old connections around reads
async def test_sockets_of_one_session_share_one_recent_session_read():
    reads: list[str | None] = []
    lost: set[str] = set()

    def staff_session_check(*, session_key: str | None) -> None:
        reads.append(session_key)
        if session_key in lost:
            raise Unauthorized("session: gone")

    shared = consumers.SharedReads()

    def check(key: str):
        return shared.read(key=key, read=lambda: staff_session_check(session_key=key))

    await asyncio.gather(*(check("a") for _ in range(50)))
    await check("b")
    assert reads == ["a", "b"]  # fifty sockets of session a: one read
    lost.add("a")
    await asyncio.sleep(consumers.SHARED_READ_S)
    for _ in range(2):
        with pytest.raises(Unauthorized):
            await check("a")
    assert reads == ["a", "b", "a"]


@pytest.mark.django_db
async def test_ingest_sockets_of_one_token_share_one_recent_token_read(monkeypatch):
    """A thousand runtimes of one token re-check it once, not a thousand times, a second;
    a revocation still reaches every one of them."""
    reads: list[int] = []
    revoked: set[int] = set()

    def api_token_is_live(*, token) -> bool:
        reads.append(token.pk)
        return token.pk not in revoked

    monkeypatch.setattr(consumers, "api_token_is_live", api_token_is_live)
    monkeypatch.setattr(consumers, "token_reads", consumers.SharedReads())
    monkeypatch.setattr(consumers, "TOKEN_RECHECK_S", 0.0)

    class Token:
        def __init__(self, pk: int) -> None:
            self.pk = pk

    def socket(pk: int) -> consumers.IngestConsumer:
        instance = consumers.IngestConsumer()
        instance.token = Token(pk)  # type: ignore[assignment]
        return instance

    sockets = [socket(1) for _ in range(100)] + [socket(2)]
    assert not any(await asyncio.gather(*(s._token_revoked() for s in sockets)))
    assert sorted(reads) == [1, 2]
    revoked.add(1)
    await asyncio.sleep(consumers.SHARED_READ_S)
    answers = await asyncio.gather(*(s._token_revoked() for s in sockets))
    assert answers == [True] * 100 + [False]
    assert sorted(reads) == [1, 1, 2, 2]


# -- the in-memory layer swept once a second ------------------------------------------------------
def test_channels_in_memory_layer_still_sweeps_on_every_receive_and_group_send():
    """The override relies on these two calling ``_clean_expired`` (and on nothing else
    depending on a sweep per call): when channels changes them, look again."""
    from channels.layers import InMemoryChannelLayer

    for method in (InMemoryChannelLayer.receive, InMemoryChannelLayer.group_send):
        assert "self._clean_expired()" in inspect.getsource(method), method
    assert "_clean_expired" in vars(InMemoryChannelLayer)
    assert "SweptInMemoryChannelLayer" in settings.CHANNEL_LAYERS["default"]["BACKEND"] or (
        "redis" in settings.CHANNEL_LAYERS["default"]["BACKEND"]
    )


@pytest.mark.parametrize(("sweep_every_s", "sweeps"), [(0.0, 20), (60.0, 1)])
async def test_the_layer_sweeps_at_most_once_per_interval(monkeypatch, sweep_every_s, sweeps):
    from channels.layers import InMemoryChannelLayer

    calls: list[int] = []
    original = InMemoryChannelLayer._clean_expired

    def counted(self) -> None:
        calls.append(1)
        original(self)

    monkeypatch.setattr(InMemoryChannelLayer, "_clean_expired", counted)
    layer = SweptInMemoryChannelLayer(sweep_every_s=sweep_every_s)
    channel = await layer.new_channel()
    await layer.group_add("run.x", channel)
    for seq in range(10):
        await layer.group_send("run.x", {"type": "run.events", "seq": seq})
        assert (await layer.receive(channel))["seq"] == seq  # delivery is unchanged
    assert len(calls) == sweeps


async def test_expired_messages_still_expire_within_the_interval_after_their_expiry():
    layer = SweptInMemoryChannelLayer(sweep_every_s=0.2, expiry=0.1)
    stale, fresh = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("run.x", stale)
    await layer.group_add("run.x", fresh)
    await layer.group_send("run.x", {"type": "run.events", "seq": 1})
    assert (await layer.receive(fresh))["seq"] == 1  # stale never reads its message
    await asyncio.sleep(0.35)  # past expiry + the sweep interval
    await layer.group_send("run.x", {"type": "run.events", "seq": 2})
    assert stale not in layer.groups["run.x"]  # its expired message dropped it from the group
    assert (await layer.receive(fresh))["seq"] == 2
