"""ASGI routes. Websockets: ingest (token auth, no Origin needed) and inspectors (staff, same
origin). HTTP: Django, except the runtime's ``POST /api/runs/<run_id>/events/``."""

from __future__ import annotations

import re
from importlib import import_module
from typing import Any

from channels.auth import get_user
from channels.middleware import BaseMiddleware
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.conf import settings
from django.http.cookie import parse_cookie
from django.http.request import split_domain_port, validate_host
from django.urls import path

from runs.consumers import IngestConsumer, RunConsumer, RunListConsumer
from runs.events_http import events_http, scope_header, scope_is_secure

EVENTS_PATH = re.compile(r"/api/runs/(?P<run_id>[^/]+)/events/")  # as runs/urls.py's route


class SessionUserMiddleware(BaseMiddleware):
    """``scope["session"]`` and ``scope["user"]`` from the Django session cookie, read once when
    the socket connects.

    channels' ``AuthMiddlewareStack`` gives the same scope and also wraps every ``send`` to
    save a session the consumer changed. The inspector sockets never change the session, and
    on a busy run that wrapper cost 5 % of a Daphne's CPU (B3: 5,000 frames a second).
    The user is ``channels.auth.get_user``'s, as there: anonymous for no session, an expired
    or flushed one, an inactive user or a changed password.
    """

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        header = next((v for k, v in scope.get("headers", []) if k == b"cookie"), b"")
        cookies = parse_cookie(header.decode("latin-1"))  # the first Cookie header, as channels
        store = import_module(settings.SESSION_ENGINE).SessionStore
        scope = dict(scope, session=store(cookies.get(settings.SESSION_COOKIE_NAME)))
        scope["user"] = await get_user(scope)
        return await super().__call__(scope, receive, send)


def staff_socket(consumer):
    """Wrap an inspector consumer: same-origin only, with the Django session's user."""
    return AllowedHostsOriginValidator(SessionUserMiddleware(consumer))


websocket_application = URLRouter(
    [
        path("ws/ingest/<str:run_id>/", IngestConsumer.as_asgi()),
        path("ws/runs/", staff_socket(RunListConsumer.as_asgi())),
        path("ws/runs/<str:run_id>/", staff_socket(RunConsumer.as_asgi())),
    ]
)


def http_application(django_app: Any) -> Any:
    """Send plain ``POST /api/runs/<run_id>/events/`` requests to ``events_http`` (the same
    pipeline as the Django view, without Django's per-request cost); all else to Django."""

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        run_id = events_run_id(scope)
        if run_id is None:
            await django_app(scope, receive, send)
            return
        route = {"args": (), "kwargs": {"run_id": run_id}}
        await events_http(dict(scope, url_route=route), receive, send)

    return application


def events_run_id(scope: dict[str, Any]) -> str | None:
    """The run id of a request Django would hand straight to ``api.run_events``, else None.

    Anything its middleware would act on goes to Django: another method or path, a query
    string, a NUL byte (RejectNulMiddleware), a Host outside ALLOWED_HOSTS (CommonMiddleware's
    400), plain HTTP when SECURE_SSL_REDIRECT is on (SecurityMiddleware's redirect).
    """
    if scope["method"] != "POST" or scope.get("query_string") or "\x00" in scope["path"]:
        return None
    path_info = scope["path"]
    root = scope.get("root_path", "")
    if root and path_info.startswith(root):
        path_info = path_info[len(root) :]
    match = EVENTS_PATH.fullmatch(path_info)
    if match is None:
        return None
    if settings.USE_X_FORWARDED_HOST or settings.DISALLOWED_USER_AGENTS:
        return None
    domain, _port = split_domain_port(scope_header(scope, b"host") or "")
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    if settings.SECURE_SSL_REDIRECT and not scope_is_secure(scope):
        return None
    return match["run_id"]
