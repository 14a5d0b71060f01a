"""Refuse NUL characters in a request's path, query, cookies or form fields before any view runs.

PostgreSQL cannot hold NUL in text, so a ``%00`` in a run id, a workflow name, an admin search
or a posted form field would otherwise fail in the database as a 500; so would a session
cookie holding one (``sessionid="\\000..."``, which Django's cookie parser unquotes to a NUL)
on every page that reads the session. (JSON bodies are checked
by ``runs.api.json_decode``; ``context_variables.json`` files by the format module's
``parse_config``.)
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.utils.deprecation import MiddlewareMixin
from django.utils.html import format_html

from contextadmin.errors import BadRequest, error_response

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _nul_in(request: HttpRequest) -> str | None:
    if "\x00" in request.path:
        return "path"
    if _holds_nul(request.GET):
        return "query"
    if any("\x00" in key or "\x00" in value for key, value in request.COOKIES.items()):
        return "cookie"
    if request.method == "POST" and request.content_type in FORM_TYPES and _holds_nul(request.POST):
        return "form"
    return None


def _holds_nul(data: QueryDict) -> bool:
    return any(
        "\x00" in key or any("\x00" in value for value in values) for key, values in data.lists()
    )


class RejectNulMiddleware(MiddlewareMixin):
    """Answer 400 naming the part of the request that holds a NUL character: JSON (the one
    error renderer, ``contextadmin.errors.error_response``) for the API and for clients that
    do not ask for HTML, a short page for a browser."""

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        where = _nul_in(request)
        if where is None:
            return None
        error = BadRequest(f"{where}: contains a NUL character (%00), which cannot be stored")
        if request.path.startswith("/api/") or not request.accepts("text/html"):
            return error_response(error)
        return HttpResponseBadRequest(
            format_html(
                "<!doctype html><title>Bad request</title><h1>Bad request (400)</h1><p>{}</p>",
                error.message,
            )
        )


class SyncChainMiddleware:
    """Last in MIDDLEWARE: under ASGI, Django runs the whole middleware chain in one worker
    thread per request instead of hopping into a thread and back for each middleware's
    ``process_request``/``process_response``.

    Only Django's documented middleware flags: being sync-only and innermost, it makes Django
    adapt the chain above it to sync mode, so the handler makes one hop for the chain. Async
    views still run on the event loop (``runs.api.run_events``). Measured in bench/notes.md.
    """

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)
