"""The middleware chain runs as one sync call under ASGI (SyncChainMiddleware, a B1-B4
optimisation): one thread hop per request instead of one per middleware method."""

from __future__ import annotations

from asgiref.sync import SyncToAsync
from django.core.handlers.asgi import ASGIHandler


def test_the_asgi_middleware_chain_is_a_single_sync_to_async_call() -> None:
    handler = ASGIHandler()
    assert isinstance(handler._middleware_chain, SyncToAsync)
