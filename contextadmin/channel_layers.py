"""The Redis channel layer for several Daphne processes: channels_redis's pub/sub layer, bounded.

Why pub/sub (docs/benchmarks.md, B4): the run's broadcasts are group messages to every
inspector of a run. channels_redis's list-based ``RedisChannelLayer`` stores one copy per
member channel in Redis and every process pops them one ``BZPOPMIN`` at a time, so a run with
25 inspectors on a process costs that process 25 Redis round trips per event, in one receive
loop. With pub/sub a ``group_send`` is one ``PUBLISH``; each process subscribed to the group
gets one copy and hands it to its local members in memory.

What pub/sub does not give, and why it is safe here: a message published while a process is
disconnected from Redis is not kept for it. Nothing here depends on delivery: the event log
is the truth and inspectors refill any gap from it by seq (docs/reliability.md).

What this subclass adds: channels_redis keeps each channel's messages in an unbounded
``asyncio.Queue``; here it holds at most ``capacity`` (``CHANNEL_LAYER_CAPACITY``) and drops
newer ones, as the other layers do, so a stalled consumer cannot grow the process's memory.
It overrides two internals of channels_redis 4.3 (``_get_layer``, ``_subscribe_to_channel``,
``_receive_message``): pyproject.toml pins the minor version, and
tests/reliability/test_channel_layer.py checks the bound on a real redis-server.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels_redis.pubsub import (
    RedisPubSubChannelLayer,
    RedisPubSubLoopLayer,
    RedisSingleShardConnection,
)
from channels_redis.utils import _wrap_close

logger = logging.getLogger(__name__)

DEFAULT_CAPACITY = 100  # as channels' layers


class _BoundedShardConnection(RedisSingleShardConnection):
    def _receive_message(self, message: dict[str, Any] | None) -> None:
        if message is None:
            return
        name = message["channel"]
        if isinstance(name, bytes):
            name = name.decode()
        layer = self.channel_layer
        if name in layer.channels:
            layer.deliver(name, message["data"])
        elif name in layer.groups:
            for channel in layer.groups[name]:
                if channel in layer.channels:
                    layer.deliver(channel, message["data"])


class _BoundedLoopLayer(RedisPubSubLoopLayer):
    def __init__(self, *args: Any, capacity: int = DEFAULT_CAPACITY, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.capacity = capacity
        self.dropped = 0
        self._shards = [_BoundedShardConnection(shard.host, self) for shard in self._shards]

    async def _subscribe_to_channel(self, channel: str) -> None:
        self.channels[channel] = asyncio.Queue(maxsize=self.capacity)
        await self._get_shard(channel).subscribe(channel)

    def deliver(self, channel: str, data: bytes) -> None:
        """Queue a message for a local channel; drop it when the channel is full."""
        try:
            self.channels[channel].put_nowait(data)
        except asyncio.QueueFull:
            self.dropped += 1
            logger.debug(
                "channel %s is full (%s messages): message dropped", channel, self.capacity
            )


class BoundedRedisPubSubChannelLayer(RedisPubSubChannelLayer):
    """``channels_redis.pubsub.RedisPubSubChannelLayer`` whose channels hold at most
    ``capacity`` messages. ``expiry`` is accepted (the other layers' setting) and unused:
    a message waits only in its process's memory, bounded by ``capacity``."""

    def __init__(
        self, *args: Any, capacity: int = DEFAULT_CAPACITY, expiry: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.capacity = capacity

    def _get_layer(self) -> _BoundedLoopLayer:
        loop = asyncio.get_running_loop()
        try:
            return self._layers[loop]  # type: ignore[no-any-return]
        except KeyError:
            layer = _BoundedLoopLayer(
                *self._args, capacity=self.capacity, channel_layer=self, **self._kwargs
            )
            self._layers[loop] = layer
            _wrap_close(self, loop)
            return layer
