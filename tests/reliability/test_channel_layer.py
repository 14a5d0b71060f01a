"""The channel layer may drop messages: a full channel (a stalled consumer) or a message older
than the layer's expiry. The inspector consumer notices from the seqs (a gap), or by itself (a
dropped *tail* leaves no later message to reveal a gap), and refills from the log; a stalled
consumer holds at most ``capacity`` messages with the in-memory and the "lists" layer.

In-process through the real ASGI stack, with channels' in-memory layer and with both Redis
layers of settings.REDIS_CHANNEL_LAYER (channels_redis's "lists" RedisChannelLayer and "pubsub"
RedisPubSubChannelLayer, as shipped) on a real redis-server, each configured small so the drops
happen on purpose. The pub/sub layer has no capacity (it never drops for a full channel: a
stalled consumer's messages wait in its process, docs/reliability.md), so only the expiry
case applies to it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_client
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from contextadmin.asgi import application
from devservers.processes import Redis
from runs.consumers import RunConsumer
from runs.services import ingest
from tests.reliability.helpers import varied_events
from tests.support.inspector import watched_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis]


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Redis]:
    server = Redis(workdir=tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["memory", "lists", "pubsub"])
def layer_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


BOUNDED = pytest.mark.parametrize("layer_kind", ["memory", "lists"])  # pub/sub has no capacity

@pytest.fixture
def configure_layer(layer_kind: str, request: pytest.FixtureRequest, settings: Any):
    """Return ``configure(capacity=, expiry=)``: point channels at a small layer of this kind."""

    def configure(*, capacity: int, expiry: int = 30) -> None:
        if layer_kind == "memory":
            backend, config = "channels.layers.InMemoryChannelLayer", {}  # as settings
        else:
            server = request.getfixturevalue("redis_server")
            redis_client.Redis.from_url(server.url).flushall()
            backend = {
                "lists": "channels_redis.core.RedisChannelLayer",
                "pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
            }[layer_kind]
            config = {"hosts": [{"address": server.url, "socket_timeout": 30}]}  # as settings
        # Changing the setting makes channels build a fresh layer from it.
        settings.CHANNEL_LAYERS = {
            "default": {
                "BACKEND": backend,
                "CONFIG": {**config, "capacity": capacity, "expiry": expiry},
            }
        }

    return configure


class Stall:
    """Hold the inspector consumer inside its first group message until ``release()``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gate = asyncio.Event()
        self.channel_name: str | None = None
        original = RunConsumer.run_events
        stall = self

        async def stalled(consumer: RunConsumer, message: dict[str, Any]) -> None:
            stall.channel_name = consumer.channel_name
            await stall.gate.wait()
            await original(consumer, message)

        monkeypatch.setattr(RunConsumer, "run_events", stalled)

    async def caught(self) -> None:
        """Wait until the consumer is held inside a group message."""
        for _ in range(500):
            if self.channel_name is not None:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the consumer never received a group message")

    def release(self) -> None:
        self.gate.set()


async def open_inspector(run_id: str, session: str) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(
        application,
        f"/ws/runs/{run_id}/",
        headers=[(b"origin", b"http://testserver"), (b"cookie", f"sessionid={session}".encode())],
    )
    connected, _ = await comm.connect()
    assert connected
    assert json.loads(await comm.receive_from(timeout=5))["type"] == "snapshot"
    return comm


async def post_one_by_one(run_id: str, events: list[dict[str, Any]]) -> None:
    """One ingest (so one group message) per event."""
    for event in events:
        await sync_to_async(ingest.event_ingest)(run_id=run_id, events=[event])


async def receive_seqs(comm: WebsocketCommunicator, *, quiet: float = 0.3) -> list[int]:
    """Receive event seqs until nothing more comes for ``quiet`` seconds."""
    seqs: list[int] = []
    for _ in range(10_000):
        if await comm.receive_nothing(timeout=quiet):
            return seqs
        message = json.loads(await comm.receive_from(timeout=5))
        assert message["type"] == "event", message
        seqs.append(message["seq"])
    return seqs


async def pending_messages(kind: str, channel_name: str, redis_url: str | None) -> int:
    """How many messages wait for the consumer's channel inside the layer."""
    layer = get_channel_layer()
    if kind == "memory":  # held in this process's queues
        queue = layer.channels.get(channel_name)
        return queue.qsize() if queue is not None else 0
    key = layer.prefix + layer.non_local_name(channel_name)
    waiting = redis_client.Redis.from_url(redis_url).zcard(key)
    local = layer.receive_buffer.get(channel_name)
    return int(waiting) + (local.qsize() if local is not None else 0)


async def close(comm: WebsocketCommunicator) -> None:
    await comm.disconnect()
    layer = get_channel_layer()
    if hasattr(layer, "close_pools"):
        await layer.close_pools()


@pytest.mark.slow
@BOUNDED
async def test_a_stalled_inspector_holds_at_most_capacity_messages_then_gets_them_all(
    layer_kind, configure_layer, monkeypatch, request
):
    """The bound: ``capacity`` messages per stalled consumer; the rest is dropped by the layer
    and re-read from the log once the consumer moves again, tail included (a ping asks for it,
    as the inspector page does every 20 s)."""
    capacity, total = 5, 100
    configure_layer(capacity=capacity)
    monkeypatch.setattr(
        RunConsumer, "resync_interval", 60.0, raising=False
    )  # only the ping helps here
    session, run_id = await sync_to_async(watched_run)()
    stall = Stall(monkeypatch)
    comm = await open_inspector(run_id, session)
    redis_url = request.getfixturevalue("redis_server").url if layer_kind != "memory" else None
    await post_one_by_one(run_id, varied_events(1))
    await stall.caught()  # the consumer is stuck in its first message: the rest must wait
    await post_one_by_one(run_id, varied_events(total - 1, start=2))
    held = await pending_messages(layer_kind, stall.channel_name, redis_url)
    assert held <= capacity, f"a stalled consumer holds {held} messages"

    stall.release()
    before_ping = await receive_seqs(comm)
    # What the layer kept arrives; the burst's tail was dropped and no later message shows it.
    assert before_ping == list(range(1, len(before_ping) + 1))
    assert len(before_ping) <= capacity + 1 < total

    await comm.send_to(text_data=json.dumps({"type": "ping"}))
    rest: list[int] = []
    for _ in range(total):
        message = json.loads(await comm.receive_from(timeout=5))
        if message["type"] == "pong":
            assert message["seq"] == total
            break
        rest.append(message["seq"])
    assert before_ping + rest == list(range(1, total + 1))
    assert await comm.receive_nothing(timeout=0.2)
    await close(comm)


@pytest.mark.slow
@BOUNDED
async def test_a_gap_from_a_full_channel_is_refilled_from_the_log(
    layer_kind, configure_layer, monkeypatch
):
    configure_layer(capacity=3)
    monkeypatch.setattr(
        RunConsumer, "resync_interval", 60.0, raising=False
    )  # the gap alone must do it
    session, run_id = await sync_to_async(watched_run)()
    stall = Stall(monkeypatch)
    comm = await open_inspector(run_id, session)
    await post_one_by_one(run_id, varied_events(1))
    await stall.caught()
    await post_one_by_one(run_id, varied_events(19, start=2))
    stall.release()
    first = await receive_seqs(comm)
    assert len(first) < 20
    await post_one_by_one(run_id, varied_events(1, start=21))  # its seq jumps past the gap
    assert first + await receive_seqs(comm) == list(range(1, 22))
    await close(comm)


@pytest.mark.slow
async def test_a_consumer_stalled_past_expiry_rejoins_and_catches_up_by_itself(
    layer_kind, configure_layer, monkeypatch
):
    """Messages older than ``expiry`` are dropped (the in-memory layer also drops the consumer
    from its groups): with no ping and no later message, the consumer's idle check re-joins the
    group and refills from the log."""
    configure_layer(capacity=100, expiry=1)
    monkeypatch.setattr(RunConsumer, "resync_interval", 0.2, raising=False)
    session, run_id = await sync_to_async(watched_run)()
    stall = Stall(monkeypatch)
    comm = await open_inspector(run_id, session)
    await post_one_by_one(run_id, varied_events(5))
    await asyncio.sleep(2.1)  # past expiry (the layers count whole seconds)
    stall.release()
    seqs = await receive_seqs(comm, quiet=1.0)
    assert seqs == [1, 2, 3, 4, 5]
    await post_one_by_one(run_id, varied_events(5, start=6))  # live again after re-joining
    assert seqs + await receive_seqs(comm, quiet=1.0) == list(range(1, 11))
    await close(comm)
