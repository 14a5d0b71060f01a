"""The inspector's resume protocol, as a plain asyncio class: every event after the snapshot
exactly once and in order, across dropped group messages and forgotten memberships.

- De-duplication: anything at or below the last seq sent is dropped (the inspector joins its
  group *before* reading the log, so an event can arrive both ways).
- Gap -> catch-up: a group message whose seq jumps ahead (the layer dropped one) makes it read
  the log from its last seq first.
- Idle resync: a dropped *tail* shows no gap, and a layer may forget a member (in-memory expiry,
  a Redis restart), so it re-joins and re-reads the log on a ping and on an idle timer, which
  backs off while the run is quiet and stays off while group messages keep arriving.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from runs.socket_tasks import task_stop

logger = logging.getLogger(__name__)

Items = list[tuple[int, str]]  # (seq, wire message), in seq order

RESYNC_INTERVAL_S = 5.0  # idle check after events arrived...
RESYNC_MAX_INTERVAL_S = 60.0  # ...backing off to this while the run is quiet
PING_RESYNC_MIN_S = 1.0  # pings re-read the log at most this often


@dataclass(kw_only=True, eq=False)
class ResumeStream:
    """Send one inspector a run's events after ``last_seq``, each exactly once, in order.

    ``read_after(seq)`` returns the log's next chunk after ``seq`` (fewer than ``chunk`` items
    at its end); ``rejoin()`` re-joins the run's group; ``send(text)`` sends one message.
    """

    last_seq: int
    send: Callable[[str], Awaitable[None]]
    read_after: Callable[[int], Awaitable[Items]]
    rejoin: Callable[[], Awaitable[None]]
    chunk: int
    resync_interval: float = RESYNC_INTERVAL_S
    resync_max_interval: float = RESYNC_MAX_INTERVAL_S
    ping_resync_min: float = PING_RESYNC_MIN_S
    name: str = ""
    # one sender at a time: group messages, pings, the timer
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _last_resync: float = field(default=0.0, init=False)
    _last_delivery: float = field(default=0.0, init=False)
    _timer: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    async def catch_up(self) -> None:
        """Send what the log holds past ``last_seq``."""
        async with self._lock:
            await self._catch_up()

    def start(self) -> None:
        """Start the idle timer."""
        self._timer = asyncio.ensure_future(self._resync_periodically())

    async def stop(self) -> None:
        """Stop the idle timer."""
        await task_stop(self._timer)
        self._timer = None

    async def deliver(self, items: Items) -> None:
        """Send a group message's events: drop what was sent, fill a gap from the log first."""
        self._last_delivery = time.monotonic()
        async with self._lock:
            for seq, text in items:
                if seq <= self.last_seq:
                    continue
                if seq > self.last_seq + 1:
                    logger.info(
                        "inspector %s saw a gap (%s -> %s); catching up", self.name,
                        self.last_seq, seq,
                    )
                    await self._catch_up()
                    if seq <= self.last_seq:
                        continue
                await self.send(text)
                self.last_seq = seq

    async def ping(self) -> int:
        """Resync (at most every ``ping_resync_min`` s) and return the last seq sent: a client
        that pings sees any events the layer dropped before its pong."""
        if self._timer is not None and time.monotonic() - self._last_resync >= self.ping_resync_min:
            async with self._lock:
                await self._resync()
        return self.last_seq

    async def _catch_up(self) -> None:
        while True:
            items = await self.read_after(self.last_seq)
            for seq, text in items:
                await self.send(text)
                self.last_seq = seq
            if len(items) < self.chunk:
                return

    async def _resync(self) -> None:
        """Re-join the group (idempotent) and send what the log has past ``last_seq``."""
        self._last_resync = time.monotonic()
        try:
            await self.rejoin()
        except Exception:  # the log is still read; the next resync joins again
            logger.warning("inspector %s: group re-join failed", self.name, exc_info=True)
        await self._catch_up()

    async def _resync_periodically(self) -> None:
        """Resync ``resync_interval`` s after events arrived, then less often (doubling up to
        ``resync_max_interval`` s) while nothing changes; not while group messages keep
        arriving (then the membership works, and a lost message shows as a gap)."""
        delay, seen = self.resync_interval, self.last_seq
        while True:
            await asyncio.sleep(delay)
            quiet_for = time.monotonic() - self._last_delivery
            if quiet_for < self.resync_interval:
                delay = self.resync_interval - quiet_for
                continue
            try:
                async with self._lock:
                    await self._resync()
            except Exception:  # never close the socket for this: the next round tries again
                logger.warning("inspector %s resync failed", self.name, exc_info=True)
            if self.last_seq != seen:
                delay, seen = self.resync_interval, self.last_seq
            else:
                delay = min(delay * 2, self.resync_max_interval)
