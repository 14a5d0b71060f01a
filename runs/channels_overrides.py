"""The project's overrides of channels internals, each measured, pinned and tested.

Pinned with channels (pyproject.toml: channels 4.3.x); tests/runs/test_channels_overrides.py
fails when the channels code each one mirrors or relies on changes. Each was kept only for at
least 1.5x on a user-visible figure in one A/B run (bench/notes.md).

1. ``DispatchWithoutConnectionHop``: dispatch without a thread hop per message.
   channels 4.2+ ``AsyncConsumer.dispatch`` awaits ``aclose_old_connections()`` before every
   handler: ``sync_to_async(close_old_connections)``, a hop into the process's one
   thread-sensitive thread for every frame a socket receives and every group message it is
   handed. Fifty inspectors of a busy run make thousands of such hops a second, queued behind
   each other on that one thread (B3). The hop buys nothing for these consumers: each of
   their database reads runs through ``database_sync_to_async`` (which closes old connections
   itself, before and after the call) or ``runs.db.pool_sync_to_async`` (its own connection
   policy), never on the event loop. Upstream: an opt-out attribute on ``AsyncConsumer``.

2. ``SweptInMemoryChannelLayer``: channels' in-memory layer, sweeping expired messages and
   group memberships at most every ``sweep_every_s`` instead of on every ``receive`` and
   ``group_send``. The sweep walks every channel and
   every group, so with a thousand runs live and a thousand sockets open each broadcast cost
   a walk of them all (B11). Expiry is 30 s here and group expiry a day, so a sweep a second
   late changes nothing a user sees. ``sweep_every_s=0`` is channels' own behaviour
   (``CHANNEL_LAYER_SWEEP_S``). Upstream: sweep on a timer, or only the channels touched.
"""

from __future__ import annotations

import time
from typing import Any

from channels.consumer import get_handler_name
from channels.layers import InMemoryChannelLayer


class DispatchWithoutConnectionHop:
    """Mix in before a channels consumer class: hand each message to its handler directly."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)


class SweptInMemoryChannelLayer(InMemoryChannelLayer):
    """``channels.layers.InMemoryChannelLayer`` whose expiry sweep runs at most every
    ``sweep_every_s`` seconds (0: on every call, as shipped)."""

    def __init__(self, *, sweep_every_s: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sweep_every_s = sweep_every_s
        self._swept_at = float("-inf")

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept_at < self.sweep_every_s:
            return
        self._swept_at = now
        super()._clean_expired()
