"""What runs serves over ASGI. Websocket routes: ingest (token auth, no Origin needed) and
inspectors (staff, same origin). HTTP: the events POST on its own path (runs/events_asgi.py),
every other request to Django (``http_application``, given Django's by contextadmin/asgi.py).

A run id in a path must follow the run-id rule (``contextadmin_sdk.engine.format.RUN_ID_REGEX``, the
``run_id`` converter), so no consumer ever sees one that could not be stored or made into a
group name; any other path (an unknown one, a malformed run id) is refused at the handshake
by ``RefusedSocket`` and logged at INFO.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from importlib import import_module
from typing import Any

from channels.auth import get_user
from channels.middleware import BaseMiddleware
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from contextadmin_sdk.engine.format import RUN_ID_REGEX
from django.conf import settings
from django.http.cookie import parse_cookie
from django.urls import path, re_path, register_converter

from runs import api
from runs.consumers import IngestConsumer, RefusedSocket, RunConsumer, RunListConsumer
from runs.events_asgi import EventsPost

logger = logging.getLogger(__name__)

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class RunIdConverter:
    """A path segment that is a valid run id: the one rule (``contextadmin_sdk.engine.format``)."""

    regex = RUN_ID_REGEX

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(RunIdConverter, "run_id")


class SessionUserMiddleware(BaseMiddleware):
    """``scope["session"]`` and ``scope["user"]`` from the Django session cookie, read once when
    the socket connects.

    channels' ``AuthMiddlewareStack`` gives the same scope and also wraps every ``send`` to
    save a session the consumer changed. The inspector sockets never change the session, and
    on a busy run that wrapper is a visible share of a Daphne's CPU (docs/benchmarks.md, B3).
    The user is ``channels.auth.get_user``'s, as there: anonymous for no session, an expired
    or flushed one, an inactive user or a changed password.
    """

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        header = next((v for k, v in scope.get("headers", []) if k == b"cookie"), b"")
        cookies = parse_cookie(header.decode("latin-1"))  # the first Cookie header, as channels
        key = cookies.get(settings.SESSION_COOKIE_NAME)
        if key is not None and "\x00" in key:  # no session has one; PostgreSQL cannot look it up
            key = None
        store = import_module(settings.SESSION_ENGINE).SessionStore
        scope = dict(scope, session=store(key))
        scope["user"] = await get_user(scope)
        return await super().__call__(scope, receive, send)


def staff_socket(consumer):
    """Wrap an inspector consumer: same-origin only, with the Django session's user."""
    return AllowedHostsOriginValidator(SessionUserMiddleware(consumer))


websocket_application = URLRouter(
    [
        path("ws/ingest/<run_id:run_id>/", IngestConsumer.as_asgi()),
        path("ws/runs/", staff_socket(RunListConsumer.as_asgi())),
        path("ws/runs/<run_id:run_id>/", staff_socket(RunConsumer.as_asgi())),
        re_path(r"", RefusedSocket.as_asgi()),  # last: every other path, refused cleanly
    ]
)


class _PostOnly:
    """``POST`` to ``post``; any other method to ``other`` (Django: GET, HEAD, and the 405s)."""

    def __init__(self, *, post: ASGIApp, other: ASGIApp) -> None:
        self.post = post
        self.other = other

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        app = self.post if scope.get("method") == "POST" else self.other
        await app(scope, receive, send)


def http_application(django_app: ASGIApp) -> ASGIApp:
    """The site's HTTP: the events POST on its own ASGI path, every other request to Django."""
    return URLRouter(  # type: ignore[no-any-return]
        [
            path(api.EVENTS_ROUTE, _PostOnly(post=EventsPost(), other=django_app)),
            re_path(r"", django_app),
        ]
    )
