"""``POST /api/runs/<run_id>/events/`` on an ASGI path of its own: the request every runtime
makes about once a second, served on the event loop.

Django's ASGI handler gives each request a thread of its own (a ``ThreadSensitiveContext`` per
request, for the sync middleware and the view's sync steps). A thousand runtimes posting at once
are a thousand threads taking turns at the GIL, and each POST pays a thread's start and join
(B11.post in docs/benchmarks.md measures the difference). So this path builds Django's own
``ASGIRequest`` and calls the same view, ``runs.api.run_events``, with:

- the request-pure middleware of ``settings.MIDDLEWARE`` run through their documented hooks
  (``EDGE_MIDDLEWARE``: the SSL redirect and security headers, the NUL refusal, the ``Host``
  check and ``Content-Length``, X-Frame-Options);
  the rest (sessions, CSRF, users, messages) has nothing to do for a token-authenticated POST;
- the body read up to ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (+1 byte, so the view answers 413);
- the view's one sync step (authentication and decoding) in asgiref's one shared thread, not a
  thread per request;
- an exception turned into its answer by Django's own ``response_for_exception`` (a 400 for a
  disallowed ``Host``, handler500's logged 500), and 4xx/5xx answers logged by
  ``django.request``, as Django's handler does.

Django's ``request_started``/``request_finished`` signals are not sent: their receivers are
Django's own (the query log reset, stale connections and caches closed, the URLconf reset), and
this path has nothing for them to do, since its one sync step closes its database connection
itself (``runs.api.events_post_read``). A test fails when anything else listens to them.

Everything else, including ``GET`` of the same path, goes to Django (``runs.routing``).
"""

from __future__ import annotations

import io
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.exception import response_for_exception
from django.http import HttpResponse
from django.utils.log import log_response
from django.utils.module_loading import import_string

from runs import api

EDGE_MIDDLEWARE = (  # settings.MIDDLEWARE's, in its order, but for SKIPPED (a test checks)
    "django.middleware.security.SecurityMiddleware",
    "contextadmin.middleware.RejectNulMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)
SKIPPED = (  # nothing to do for a token-authenticated, CSRF-exempt POST; or Django's handler's
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "contextadmin.middleware.SyncChainMiddleware",
)

# As convert_exception_to_response calls it from an async handler (exc_info travels along).
_response_for_exception = sync_to_async(response_for_exception, thread_sensitive=False)


def _unused(request: Any) -> HttpResponse:  # the middleware's get_response: never called here
    raise AssertionError("EDGE_MIDDLEWARE run through their hooks only")


def _edge_middleware() -> list[Any]:
    return [import_string(name)(_unused) for name in EDGE_MIDDLEWARE]


class EventsPost:
    """The ASGI application of ``POST /api/runs/<run_id>/events/`` (routed by URLRouter)."""

    def __init__(self) -> None:
        self.middleware = _edge_middleware()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await _body_read(receive, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
        if body is None:  # the client went away before its body arrived
            return
        request = ASGIRequest(scope, io.BytesIO(body))
        response = await self._answer(request, run_id=scope["url_route"]["kwargs"]["run_id"])
        if response.status_code >= 400:  # as Django's handler (once: log_response marks it)
            log_response(
                "%s: %s", response.reason_phrase, request.path, response=response, request=request
            )
        await _response_send(send, response)

    async def _answer(self, request: ASGIRequest, *, run_id: str) -> HttpResponse:
        ran: list[Any] = []  # the middleware whose process_response the answer goes through
        try:
            for middleware in self.middleware:
                early = _hook(middleware, "process_request", request)
                ran.append(middleware)
                if early is not None:  # as Django: only the middleware that ran see it
                    return _finished(request, early, ran=ran)
            response = await api.run_events(request, run_id)
        except Exception as exc:  # Django's own conversion, as its handler does: a 400 for a
            # disallowed Host, 403, 404, or handler500's JSON 500 logged with its traceback
            response = await _response_for_exception(request, exc)
        return _finished(request, response, ran=ran)


def _hook(middleware: Any, name: str, *args: Any) -> Any:
    hook = getattr(middleware, name, None)
    return hook(*args) if hook is not None else None


def _finished(request: ASGIRequest, response: HttpResponse, *, ran: list[Any]) -> HttpResponse:
    for middleware in reversed(ran):
        response = _hook(middleware, "process_response", request, response) or response
    return response


async def _body_read(receive: Any, *, limit: int) -> bytes | None:
    """The request's body, at most ``limit`` bytes of it (the rest is read and dropped)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        if size < limit:
            chunks.append(chunk[: limit - size])
            size += len(chunks[-1])
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _response_send(send: Any, response: HttpResponse) -> None:
    headers = [
        (name.encode("latin-1"), str(value).encode("latin-1")) for name, value in response.items()
    ]
    for cookie in response.cookies.values():
        headers.append((b"set-cookie", cookie.output(header="").strip().encode("latin-1")))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.content})
