"""The channel layers: in memory for one Daphne process, Redis pub/sub for several.

``InMemoryChannelLayer`` is channels' own, with a ``group_send`` that costs no tasks and an
expiry sweep that runs at most a few times a second (docs/benchmarks.md, B1 and B3).

``BoundedRedisPubSubChannelLayer``, for several Daphne processes: channels_redis's pub/sub
layer, bounded.

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
It overrides two internals of channels_redis 4.3 (``_get_layer``, ``_subscribe_to_channel``)
and relies on its delivery calling ``put_nowait``: pyproject.toml pins the minor version, and
tests/reliability/test_channel_layer.py checks the bound on a real redis-server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from copy import deepcopy
from typing import Any

from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer, RedisPubSubLoopLayer
from channels_redis.utils import _wrap_close

logger = logging.getLogger(__name__)

DEFAULT_CAPACITY = 100  # as channels' layers


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):
    """channels' in-memory layer, with a ``group_send`` that puts the message straight into
    each member's queue and an expiry sweep that runs a few times a second, not per message.

    channels' ``group_send`` starts a task per member and gathers them with ``as_completed``,
    though each ``send`` finishes without waiting (a ``put_nowait``), and deep-copies the
    message for every member: for one event to one inspector the tasks were 8 % of a Daphne's
    CPU in B1, and for 50 inspectors (B3) the copies alone 5 % (py-spy). Here the members get
    one deep copy between them, each in its own dict (a consumer that sets a key changes only
    its own; none here changes a message). Otherwise delivery is channels': a full channel
    drops the message, an expired one is swept out. It uses channels 4.3's internals (the
    ``channels`` queues of ``(expires, message)``, ``_clean_expired``): pyproject.toml pins
    the minor version and tests/reliability/test_channel_layer.py runs the drop tests on it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sweep_interval = min(1.0, self.expiry / 4)
        self._sweep_due = 0.0

    def _clean_expired(self) -> None:
        """Sweep out expired messages at most every ``_sweep_interval`` s (they still expire
        within that of ``expiry``). channels sweeps every channel and group on each receive
        and group_send: in B3 that was 50 sweeps of 50 channels per event, 8 % of the CPU."""
        now = time.monotonic()
        if now >= self._sweep_due:
            self._sweep_due = now + self._sweep_interval
            super()._clean_expired()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"  # as channels
        self.require_valid_group_name(group)
        self._clean_expired()
        shared = deepcopy(message)
        expires = time.time() + self.expiry
        for channel in list(self.groups.get(group, ())):
            queue = self.channels.get(channel)
            if queue is None:
                queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
            if not queue.full():  # else dropped, as channels does (ChannelFull)
                queue.put_nowait((expires, dict(shared)))


class DroppingQueue(asyncio.Queue):  # type: ignore[type-arg]
    """A channel's queue that drops a message arriving when it is full (and counts it)."""

    def __init__(self, maxsize: int) -> None:
        super().__init__(maxsize=maxsize)
        self.dropped = 0

    def put_nowait(self, item: Any) -> None:
        if self.full():
            self.dropped += 1
            logger.debug("a channel is full (%s messages): message dropped", self.maxsize)
            return
        super().put_nowait(item)


class _BoundedLoopLayer(RedisPubSubLoopLayer):
    def __init__(self, *args: Any, capacity: int = DEFAULT_CAPACITY, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.capacity = capacity

    async def _subscribe_to_channel(self, channel: str) -> None:
        self.channels[channel] = DroppingQueue(maxsize=self.capacity)
        await self._get_shard(channel).subscribe(channel)


class BoundedRedisPubSubChannelLayer(RedisPubSubChannelLayer):
    """``channels_redis.pubsub.RedisPubSubChannelLayer`` whose channels hold at most
    ``capacity`` messages. ``expiry`` is accepted (the other layers' setting) and unused:
    a message waits only in its process's memory, bounded by ``capacity``."""

    def __init__(self, *args: Any, expiry: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # capacity stays in kwargs, for each loop's layer

    def _get_layer(self) -> _BoundedLoopLayer:
        """As channels_redis's, building the bounded loop layer."""
        loop = asyncio.get_running_loop()
        try:
            return self._layers[loop]  # type: ignore[no-any-return]
        except KeyError:
            layer = _BoundedLoopLayer(*self._args, channel_layer=self, **self._kwargs)
            self._layers[loop] = layer
            _wrap_close(self, loop)
            return layer
