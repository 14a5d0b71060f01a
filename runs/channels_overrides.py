"""The one override of channels' consumer internals: dispatch without a thread hop per message.

channels 4.2+ ``AsyncConsumer.dispatch`` awaits ``aclose_old_connections()`` before every
handler: ``sync_to_async(close_old_connections)``, a hop into the process's one
thread-sensitive thread for every frame a socket receives and every group message it is
handed. Fifty inspectors of a busy run make thousands of such hops a second, queued behind
each other on that one thread (docs/benchmarks.md, B3; bench/notes.md has the A/B figures).

The hop buys nothing for these consumers: each of their database reads runs through
``database_sync_to_async`` (which closes old connections itself, before and after the call)
or ``runs.db.pool_sync_to_async`` (its own connection policy), never on the event loop.

Pinned with channels (pyproject.toml: channels 4.3.x); tests/runs/test_channels_dispatch.py
fails when channels' dispatch stops looking like this. Upstream, an opt-out attribute on
``AsyncConsumer`` (skip the close for consumers that do their database work through
``database_sync_to_async``) would let this module go.
"""

from __future__ import annotations

from typing import Any

from channels.consumer import get_handler_name


class DispatchWithoutConnectionHop:
    """Mix in before a channels consumer class: hand each message to its handler directly."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)
