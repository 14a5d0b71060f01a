"""The runtime-facing HTTP API (DESIGN.md §6): thin views over services and selectors.

``POST /api/runs/<run_id>/events/`` is the hot path of every run. Its whole pipeline is
``events_post`` (plain arguments in, a ``Reply`` out), so it is served the same way by the
Django view below and, under ASGI, by ``runs.events_http`` outside Django's
request handler (``runs.routing``; docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from runs import ratelimit, selectors, services
from runs.errors import ApiError, BadRequest, Forbidden, RateLimited, TooLarge, Unauthorized
from runs.models import ApiToken

logger = logging.getLogger(__name__)


def json_response(data: Any, *, status: int = 200) -> HttpResponse:
    return HttpResponse(orjson.dumps(data), status=status, content_type="application/json")


@dataclass(frozen=True)
class Reply:
    """An API answer before it is rendered, by Django (``http_response``) or plain ASGI."""

    status: int
    data: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_error(cls, exc: ApiError) -> Reply:
        """The JSON 4xx for an ApiError, with Retry-After when it says when to come back."""
        headers = {}
        if "retry_after" in exc.extra:
            headers["Retry-After"] = str(exc.extra["retry_after"])
        return cls(exc.status, exc.as_dict(), headers)

    def content(self) -> bytes:
        return orjson.dumps(self.data)

    def http_response(self) -> HttpResponse:
        response = HttpResponse(self.content(), status=self.status, content_type="application/json")
        for name, value in self.headers.items():
            response[name] = value
        return response


@dataclass
class Caller:
    """Who is calling: a runtime with a token, or a staff user with a session."""

    token: ApiToken | None = None
    staff: bool = False


def bearer_secret(header: str | None) -> str | None:
    """Return the secret of an ``Authorization: Bearer <secret>`` header value."""
    if not header:
        return None
    scheme, _, secret = header.strip().partition(" ")
    return secret.strip() if scheme.lower() == "bearer" and secret.strip() else None


def caller_authenticate(request: HttpRequest, *, allow_session: bool) -> Caller:
    """Authenticate by bearer token, or (for reads) by a staff session."""
    header = request.headers.get("Authorization")
    if header:
        return Caller(token=token_authenticate(authorization=header))
    user = getattr(request, "user", None)
    if allow_session and user is not None and user.is_authenticated:
        if not user.is_staff:
            raise Forbidden("staff access required")
        return Caller(staff=True)
    raise Unauthorized("Authorization: a Bearer token is required")


def token_authenticate(*, authorization: str | None) -> ApiToken:
    """Return the live token of an ``Authorization`` header and take one request from its
    rate budget; raise Unauthorized (401) or RateLimited (429)."""
    if not authorization:
        raise Unauthorized("Authorization: a Bearer token is required")
    secret = bearer_secret(authorization)
    token = services.api_token_authenticate(secret=secret) if secret else None
    if token is None:
        raise Unauthorized("Authorization: invalid or revoked token")
    token_rate_check(token)
    return token


def token_rate_check(token: ApiToken) -> None:
    """Take one request from the token's bucket; raise RateLimited (429) when it is empty."""
    decision = ratelimit.request_allow(key=ratelimit.token_key(token))
    if not decision.allowed:
        raise RateLimited(
            f"token: over its rate limit of {decision.limit} requests a minute "
            f"(API_RATE_LIMIT_PER_MINUTE); retry after {decision.retry_after}s",
            retry_after=decision.retry_after,
        )


def error_response(exc: ApiError) -> HttpResponse:
    """Render an ApiError as JSON, with Retry-After when it says when to come back."""
    return Reply.of_error(exc).http_response()


def api_view(*, allow_session: bool) -> Callable[..., Callable[..., HttpResponse]]:
    """Wrap a view: authenticate, turn ApiError into JSON 4xx, never a 500 for bad input."""

    def decorate(view: Callable[..., Any]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                caller = caller_authenticate(request, allow_session=allow_session)
                status, data = view(request, caller, *args, **kwargs)
            except ApiError as exc:
                return error_response(exc)
            return json_response(data, status=status)

        return wrapper

    return decorate


def read_json_body(request: HttpRequest) -> dict[str, Any]:
    """Decode a JSON object body within the size limit, naming what is wrong."""
    content_length_check(request.headers.get("Content-Length"))
    content_type_check(request.content_type or "")
    return body_decode(request.read(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1))


def content_length_check(length: str | None) -> None:
    """Refuse a declared body over the limit (413) before any of it is read."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if length and length.isdigit() and int(length) > limit:
        raise TooLarge(f"body: {length} bytes, at most {limit}")


def content_type_check(content_type: str) -> None:
    """Refuse a body that is not JSON (415); no Content-Type at all is taken as JSON."""
    if content_type and content_type != "application/json":
        raise BadRequest(f"Content-Type: expected application/json, got {content_type}", status=415)


def body_decode(body: bytes) -> dict[str, Any]:
    """Decode a body read with at most one byte over the limit: a JSON object, else 413/400."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if len(body) > limit:
        raise TooLarge(f"body: more than {limit} bytes")
    data = json_decode(body, what="body")
    if not isinstance(data, dict):
        raise BadRequest("body: must be a JSON object")
    return data


def json_decode(data: bytes | str, *, what: str) -> Any:
    """Decode JSON a client sent as ``what`` (named in errors), refusing what cannot be stored.

    orjson already refuses invalid UTF-8, lone surrogates, NaN and nesting beyond 1024 levels;
    NUL characters (``\\u0000``) are refused here: PostgreSQL cannot store them in text or jsonb.
    """
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"{what}: not valid JSON ({exc})") from None
    marker = "\\u0000" if isinstance(data, str) else b"\\u0000"
    if marker in data and _has_nul(decoded):
        raise BadRequest(f"{what}: contains a NUL character (\\u0000), which cannot be stored")
    return decoded


def _has_nul(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


RUN_START_FIELDS = {"workflow", "enterprise_id", "run_id", "environment", "context"}


@csrf_exempt
@require_POST
@api_view(allow_session=False)
def run_start(request: HttpRequest, caller: Caller) -> tuple[int, dict[str, Any]]:
    """POST /api/runs/ — start a run and return its initial state."""
    body = read_json_body(request)
    unknown = sorted(set(body) - RUN_START_FIELDS)
    if unknown:
        raise BadRequest(
            f"{unknown[0]}: unknown field (expected {', '.join(sorted(RUN_START_FIELDS))})"
        )
    started = services.run_start(
        workflow_name=body.get("workflow"),  # type: ignore[arg-type]  (validated by the service)
        enterprise_id=body.get("enterprise_id"),  # type: ignore[arg-type]
        run_id=body.get("run_id"),
        environment=body.get("environment"),
        context=body.get("context"),
        token=caller.token,
    )
    run = started.run
    state = selectors.run_state_at(run=run).as_response(run)
    return (201 if started.created else 200), {"run_id": run.pk, "state": state}


@csrf_exempt
@require_POST
def run_events(request: HttpRequest, run_id: str) -> HttpResponse:
    """POST /api/runs/<run_id>/events/ — append a batch of events (idempotent by seq)."""
    return events_post(
        run_id=run_id,
        authorization=request.headers.get("Authorization"),
        content_type=request.content_type or "",
        content_length=request.headers.get("Content-Length"),
        read_body=lambda: request.read(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
    ).http_response()


def events_post(
    *,
    run_id: str,
    authorization: str | None,
    content_type: str,
    content_length: str | None,
    read_body: Callable[[], bytes],
) -> Reply:
    """Authenticate, validate and ingest one ``POST /api/runs/<run_id>/events/``.

    ``read_body`` returns the body (at most one byte over the limit); it is called only once
    the token is good, so an unauthenticated caller never gets its body read.
    """
    try:
        token = token_authenticate(authorization=authorization)
        content_length_check(content_length)
        content_type_check(content_type)
        body = body_decode(read_body())
        unknown = sorted(set(body) - {"events"})
        if unknown:
            raise BadRequest(f"{unknown[0]}: unknown field (expected events)")
        if "events" not in body:
            raise BadRequest("events: field required")
        result = services.event_ingest(run_id=run_id, events=body["events"], token=token)
    except ApiError as exc:
        return Reply.of_error(exc)
    return Reply(200, {"last_seq": result.last_seq, "flips": result.flips, "acks": result.acks})


@require_GET
@api_view(allow_session=True)
def run_state(request: HttpRequest, caller: Caller, run_id: str) -> tuple[int, dict[str, Any]]:
    """GET /api/runs/<run_id>/state/?at=<seq> — the state after seq events (latest without)."""
    run = selectors.run_get(run_id=run_id)
    services.token_check_workflow(token=caller.token, workflow_name=run.workflow_name)
    seq = selectors.parse_seq(request.GET.get("at"))
    return 200, selectors.run_state_at(run=run, seq=seq).as_response(run)
