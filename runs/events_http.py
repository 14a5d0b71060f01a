"""``POST /api/runs/<run_id>/events/`` under ASGI, served outside Django's request handler.

It runs the view's own pipeline, ``api.events_post``, with one hop into the thread pool
(``kept_connection_sync_to_async``, as the ingest socket does). Django's ASGI handler costs
even a 401 about 3 ms of CPU here: a new thread and executor per request, three hops between
threads, the middleware chain (docs/benchmarks.md, B1). It is a plain ASGI application, not a
channels consumer: a consumer's dispatch loop costs two tasks per request and listens for
messages no request gets.

``runs.routing.http_application`` sends only plain requests here; anything Django would treat
specially (another method, an unknown Host, a redirect to HTTPS, NUL bytes, a query) goes to
Django. Responses carry the headers Django's middleware would add.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.utils.http import parse_header_parameters

from runs import api, services
from runs.db import kept_connection_sync_to_async

SERVER_ERROR = "server error: retry the batch (seq makes it safe)"

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_events_post = kept_connection_sync_to_async(api.events_post)


async def events_http(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Read the body, ingest it in the thread pool, broadcast what was committed, answer.

    ``scope["url_route"]`` holds the run id (``runs.routing``). A client that disconnects
    before its body is complete gets nothing ingested.
    """
    body = await _body_read(receive, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    if body is None:
        return
    content_type = parse_header_parameters(scope_header(scope, b"content-type") or "")[0]
    with services.broadcasts_collected() as broadcasts:
        try:
            reply = await _events_post(
                run_id=scope["url_route"]["kwargs"]["run_id"],
                authorization=scope_header(scope, b"authorization"),
                content_type=content_type,
                content_length=scope_header(scope, b"content-length"),
                read_body=lambda: body,
            )
        except Exception:  # as Django would: log it with its traceback, answer 500 (JSON)
            _request_log(500, scope["path"], exc_info=True)
            reply = api.Reply(500, {"error": SERVER_ERROR})
        else:
            if reply.status >= 400:
                _request_log(reply.status, scope["path"])
    await services.broadcasts_send(broadcasts)  # what was committed, before the answer
    content = reply.content()
    headers = [
        (b"Content-Type", b"application/json"),
        (b"Content-Length", str(len(content)).encode()),
        *((name.encode(), value.encode()) for name, value in reply.headers.items()),
        *_security_headers(secure=scope_is_secure(scope)),
    ]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


async def _body_read(receive: Receive, *, limit: int) -> bytes | None:
    """The request body, keeping at most one byte over ``limit`` (enough for ``body_decode``'s
    413); None if the client disconnected first."""
    chunks: list[bytes] = []
    kept = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        if kept <= limit:
            chunks.append(chunk)
            kept += len(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)[: limit + 1]


def scope_header(scope: dict[str, Any], name: bytes) -> str | None:
    """The value of a request header (``name`` in lower case) as Django reads it: a header
    sent more than once is its values joined with commas."""
    values = [value.decode("latin-1") for key, value in scope["headers"] if key.lower() == name]
    return ",".join(values) if values else None


def scope_is_secure(scope: dict[str, Any]) -> bool:
    """``request.is_secure()`` for an ASGI scope (honours SECURE_PROXY_SSL_HEADER)."""
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        header = proxy[0].removeprefix("HTTP_").replace("_", "-").lower().encode()
        value = scope_header(scope, header)
        if value is not None:
            return value.split(",", 1)[0].strip() == proxy[1]
    return bool(scope.get("scheme") == "https")


def _request_log(status: int, path: str, *, exc_info: bool = False) -> None:
    """Log a 4xx/5xx as Django's handler does (logger ``django.request``, path only; a 500
    with the exception's traceback)."""
    level = logging.ERROR if status >= 500 else logging.WARNING
    logging.getLogger("django.request").log(
        level, "%s: %s", HTTPStatus(status).phrase, path, exc_info=exc_info
    )


def _security_headers(*, secure: bool) -> list[tuple[bytes, bytes]]:
    """The headers SecurityMiddleware and XFrameOptionsMiddleware add to a response."""
    headers: list[tuple[bytes, bytes]] = []
    if secure and settings.SECURE_HSTS_SECONDS:
        hsts = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            hsts += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            hsts += "; preload"
        headers.append((b"Strict-Transport-Security", hsts.encode()))
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"X-Content-Type-Options", b"nosniff"))
    policy = settings.SECURE_REFERRER_POLICY
    if policy:
        value = policy if isinstance(policy, str) else ",".join(policy)
        headers.append((b"Referrer-Policy", value.encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append(
            (b"Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode())
        )
    headers.append((b"X-Frame-Options", settings.X_FRAME_OPTIONS.encode()))
    return headers
