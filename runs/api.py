"""The runtime-facing HTTP API (docs/api.md) and the workflow export: thin views over
services and selectors, behind Django's handler and middleware like every other request but
the events POST, which has an ASGI path of its own (runs/events_asgi.py).

``POST /api/runs/<run_id>/events/`` is the hot path of every run over HTTP. It is an async
view with one hop into a worker thread (authenticate, decode) and its batch committed in the
process's group commit, as the ``/ws/ingest/`` sockets' batches are (docs/architecture.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from contextadmin_sdk.engine.format import ConfigError
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import Resolver404, resolve
from django.utils.http import parse_etags
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from contextadmin import selectors as definitions
from contextadmin.errors import (
    ApiError,
    BadRequest,
    Conflict,
    MethodNotAllowed,
    NotFound,
    TooLarge,
    error_response,
    json_response,
)
from runs import selectors
from runs.auth import Caller, authenticate
from runs.batching import event_ingest_grouped
from runs.json_input import fields_check, json_decode
from runs.models import ApiToken
from runs.services import lifecycle
from runs.shedding import events_post_admitted
from runs.state import run_state_at
from runs.tokens import token_check_workflow

View = Callable[..., tuple[int, Any]]
SERVER_ERROR = "server error: retry (a batch with seq numbers is safe to retry)"


def api_view(
    *, methods: tuple[str, ...], session_allowed: bool = False
) -> Callable[[View], Callable[..., HttpResponse]]:
    """Wrap a view returning ``(status, data)``: check the method, authenticate, render the
    data as JSON (a response as it is) and every ApiError as its JSON 4xx."""
    allowed = (*methods, "HEAD") if "GET" in methods else methods

    def decorate(view: View) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                if request.method not in allowed:
                    raise MethodNotAllowed(str(request.method), allowed)
                caller = authenticate(
                    authorization=request.headers.get("Authorization"),
                    user=getattr(request, "user", None),
                    session_allowed=session_allowed,
                )
                status, data = view(request, caller, *args, **kwargs)
            except ApiError as exc:
                return error_response(exc)
            if isinstance(data, HttpResponseBase):  # a response as it is (streamed ones too)
                return data
            return json_response(data, status=status)

        return csrf_exempt(wrapper)

    return decorate


# -- request bodies ---------------------------------------------------------------------------
def read_json_body(request: HttpRequest) -> dict[str, Any]:
    """Decode a JSON object body within the size limit, naming what is wrong."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    length = request.headers.get("Content-Length")
    if length and length.isdigit() and int(length) > limit:
        raise TooLarge(f"body: {length} bytes, at most {limit}")
    content_type = request.content_type or ""
    if content_type and content_type != "application/json":
        raise BadRequest(f"Content-Type: expected application/json, got {content_type}", status=415)
    body = request.read(limit + 1)
    if len(body) > limit:
        raise TooLarge(f"body: more than {limit} bytes")
    data = json_decode(body, what="body")
    if not isinstance(data, dict):
        raise BadRequest("body: must be a JSON object")
    return data


# -- runs -------------------------------------------------------------------------------------
RUN_START_FIELDS = {
    "workflow", "enterprise_id", "run_id", "environment", "context", "runtime", "definitions",
    "unresolved",
}


@api_view(methods=("POST",))
def run_start(request: HttpRequest, caller: Caller) -> tuple[int, dict[str, Any]]:
    """POST /api/runs/ — start a run and return its initial state."""
    body = read_json_body(request)
    fields_check(body, allowed=RUN_START_FIELDS)
    started = lifecycle.run_start(
        workflow_name=body.get("workflow"),  # type: ignore[arg-type]  (validated by the service)
        enterprise_id=body.get("enterprise_id"),  # type: ignore[arg-type]
        run_id=body.get("run_id"),
        environment=body.get("environment"),
        context=body.get("context"),
        runtime=body.get("runtime"),
        definitions=body.get("definitions"),
        unresolved=body.get("unresolved"),
        token=caller.token,
    )
    run = started.run
    state = run_state_at(run=run).as_response(run)
    return (201 if started.created else 200), {"run_id": run.pk, "state": state}


def events_post_read(request: HttpRequest) -> tuple[ApiToken | None, Any]:
    """Authenticate and decode one batch, in the request's thread (``run_events`` ingests it)."""
    try:
        caller = authenticate(
            authorization=request.headers.get("Authorization"),
            user=getattr(request, "user", None),
            session_allowed=False,
        )
        body = read_json_body(request)
        fields_check(body, allowed={"events"})
        if "events" not in body:
            raise BadRequest("events: field required")
    finally:
        # Give this thread's connection back (to the pool, on PostgreSQL) before the request
        # waits for the group commit, which uses its own: a waiting request otherwise holds one
        # of the pool's few connections, and a few dozen waiting POSTs starve the pool
        # (B11.prod). The thread may be the one shared by every POST (runs/events_asgi.py).
        if not connection.in_atomic_block:
            connection.close()
    return caller.token, body["events"]


# Thread-sensitive, as Django runs sync views: under Django's handler the request's own worker
# thread; on the events POST's own ASGI path (runs/events_asgi.py) asgiref's one shared thread.
_events_post_read_in_thread = sync_to_async(events_post_read)

EVENTS_ROUTE = "api/runs/<str:run_id>/events/"  # Django's URLconf and runs/events_asgi.py


@csrf_exempt
async def run_events(request: HttpRequest, run_id: str) -> HttpResponse:
    """POST /api/runs/<run_id>/events/ — append a batch of events (idempotent by seq);
    GET — the stored events (``events_get``).

    A POST joins this process's group commit, like the ingest sockets' batches: the batches of
    many runtimes that arrive while one commit runs share the next transaction (each still all
    or nothing, with the same acknowledgement), and what it committed is broadcast from the
    event loop before the answer. While the process is behind, a POST is refused with a 503 and
    ``Retry-After`` before any work (``runs/shedding.py``). Under Daphne a POST reaches this view
    through its own ASGI path, not Django's handler (``runs/events_asgi.py``).
    """
    if request.method in ("GET", "HEAD"):
        return await _events_get_in_thread(request, run_id)
    if request.method != "POST":
        return error_response(MethodNotAllowed(str(request.method), ("GET", "HEAD", "POST")))
    try:
        with events_post_admitted(request):  # a 503 at once while this process is behind
            token, events = await _events_post_read_in_thread(request)
            result = await event_ingest_grouped(run_id=run_id, events=events, token=token)
    except ApiError as exc:
        return error_response(exc)
    return json_response({"last_seq": result.last_seq, "flips": result.flips, "acks": result.acks})


# -- the run's log: paginated JSON, or the whole run as JSONL (the run page's download) ---------
EXPORT_FORMATS = ("json", "jsonl")
EXPORT_PAGE_DEFAULT = 1000
EXPORT_PAGE_MAX = 10_000


@api_view(methods=("GET",), session_allowed=True)
def events_get(request: HttpRequest, caller: Caller, run_id: str) -> tuple[int, HttpResponse]:
    """GET /api/runs/<run_id>/events/?after=N&limit=M&format=json|jsonl — the stored events.

    Streamed a chunk at a time from an async generator (constant memory whatever the run's
    size). ``json`` is one page (``limit`` at most 10,000, ``next_after`` to continue);
    ``jsonl`` is the download: without ``after``, a first line describing the run (for
    ``import_run``), then one event per line, every event unless ``limit`` says otherwise.
    """
    run = selectors.run_get(run_id=run_id, token=caller.token)
    after = selectors.parse_seq(request.GET.get("after"), name="after")
    limit = selectors.parse_seq(request.GET.get("limit"), name="limit")
    form = request.GET.get("format") or "json"
    if form not in EXPORT_FORMATS:
        raise BadRequest(f"format: one of {', '.join(EXPORT_FORMATS)}, got {form[:20]!r}")
    if limit == 0:
        raise BadRequest("limit: at least 1")
    if form == "json":
        limit = EXPORT_PAGE_DEFAULT if limit is None else limit
        if limit > EXPORT_PAGE_MAX:
            raise BadRequest(f"limit: at most {EXPORT_PAGE_MAX} for format=json (or use jsonl)")
        response = StreamingHttpResponse(
            _events_json(run_id=run.pk, after=after or 0, limit=limit),
            content_type="application/json",
        )
    else:
        header = selectors.run_export_header(run=run) if after is None else None
        response = StreamingHttpResponse(
            _events_jsonl(run_id=run.pk, header=header, after=after or 0, limit=limit),
            content_type="application/x-ndjson",
        )
        response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.jsonl"'
    response["Cache-Control"] = "private, no-store"
    if request.method == "HEAD":  # the headers only: no chunk of the log is read
        response.streaming_content = _nothing()
    return 200, response


async def _nothing() -> Any:
    return
    yield  # an async generator that yields nothing


_events_get_in_thread = sync_to_async(events_get)
_events_chunk_in_thread = sync_to_async(selectors.run_events_chunk)


async def _events_chunks(*, run_id: str, after: int, limit: int | None) -> Any:
    """Yield the events after ``after`` a chunk at a time (at most ``limit``; None: all)."""
    remaining, chunk = limit, selectors.EXPORT_CHUNK
    while remaining is None or remaining > 0:
        size = chunk if remaining is None else min(chunk, remaining)
        events = await _events_chunk_in_thread(run_id=run_id, after=after, limit=size)
        if not events:
            return
        yield events
        after = events[-1]["seq"]
        if remaining is not None:
            remaining -= len(events)
        if len(events) < size:
            return


async def _events_jsonl(
    *, run_id: str, header: dict[str, Any] | None, after: int, limit: int | None
) -> Any:
    if header is not None:
        yield orjson.dumps(header) + b"\n"
    async for events in _events_chunks(run_id=run_id, after=after, limit=limit):
        yield b"".join(orjson.dumps(event) + b"\n" for event in events)


async def _events_json(*, run_id: str, after: int, limit: int) -> Any:
    yield b'{"run_id":' + orjson.dumps(run_id) + b',"after":' + str(after).encode() + b',"events":['
    count, last, separator = 0, after, b""
    async for events in _events_chunks(run_id=run_id, after=after, limit=limit):
        yield separator + b",".join(orjson.dumps(event) for event in events)
        separator = b","
        count += len(events)
        last = events[-1]["seq"]
    more = orjson.dumps(last if count == limit else None)
    yield b'],"last_seq":' + str(last).encode() + b',"next_after":' + more + b"}"


@api_view(methods=("GET",), session_allowed=True)
def run_state(request: HttpRequest, caller: Caller, run_id: str) -> tuple[int, dict[str, Any]]:
    """GET /api/runs/<run_id>/state/?at=<seq> — the state after seq events (latest without)."""
    run = selectors.run_get(run_id=run_id, token=caller.token)
    seq = selectors.parse_seq(request.GET.get("at"))
    return 200, run_state_at(run=run, seq=seq).as_response(run)


# -- the export (deployment pipelines, the admin's download buttons) ---------------------------
@api_view(methods=("GET",), session_allowed=True)
def workflow_context_variables(
    request: HttpRequest, caller: Caller, name: str
) -> tuple[int, HttpResponse]:
    """GET /api/workflows/<name>/context_variables.json?environment=&version=N|draft — the
    published version's export (docs/versions.md), an attachment with its version number and
    a strong ETag; a matching If-None-Match gets 304.

    A token scoped to another workflow is refused before the name is looked up, so it learns
    nothing about which workflows exist.
    """
    token_check_workflow(token=caller.token, workflow_name=name)
    workflow = definitions.workflow_get(name=name)
    if workflow is None:
        raise NotFound(f"name: no workflow named {name!r}", field="name")
    try:
        exported = definitions.workflow_export_version(
            workflow=workflow,
            environment=request.GET.get("environment", "development"),
            version=definitions.version_parse(request.GET.get("version", "")),
        )
    except definitions.VersionNotFound as exc:
        raise NotFound(str(exc), field="version") from None
    except definitions.UnknownEnvironment as exc:
        raise BadRequest(f"environment: {exc}", field="environment") from None
    except ConfigError as exc:  # an unversioned workflow whose rows break a rule
        raise Conflict(
            f"the definitions of {name} break the format; fix them in the admin",
            issues=[{"path": issue.path, "message": issue.message} for issue in exc.issues],
        ) from None
    if _etags(request.headers.get("If-None-Match")) & {exported.etag, "*"}:
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(exported.body, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="context_variables.json"'
    response["ETag"] = exported.etag
    response["Cache-Control"] = "private, no-cache"
    if exported.number is not None:
        response["X-Context-Version"] = str(exported.number)
    response["X-Context-Version-Status"] = exported.status
    return response.status_code, response


def _etags(header: str | None) -> set[str]:
    """The entity tags of an If-None-Match header (``*`` matches any), compared weakly as
    RFC 9110 says for it: a compressing proxy (nginx's gzip) passes ``W/"…"`` on."""
    return {tag.removeprefix("W/") for tag in parse_etags(header or "")}


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: the API's callers get JSON (Django has logged the failure with its
    traceback); pages get Django's own error page."""
    if request.path.startswith("/api/"):
        return error_response(ApiError(SERVER_ERROR, status=500))
    return defaults.server_error(request)


@csrf_exempt  # a POST to a wrong path gets this 404, not the CSRF page
def api_not_found(request: HttpRequest) -> HttpResponse:
    """Any other path under ``/api/``: the API's JSON 404, not Django's HTML page; a path that
    exists with a trailing slash says so (Django's slash redirect cannot keep a POST's body)."""
    message = f"path: no API endpoint at {request.path}"
    if not request.path.endswith("/"):
        try:
            match = resolve(f"{request.path}/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            message += f": did you mean {request.path}/ (with the trailing slash)?"
    return error_response(NotFound(f"{message}; the endpoints are in docs/api.md", field="path"))
