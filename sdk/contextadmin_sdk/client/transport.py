"""What both reporting modes share on the wire: the server's URL, the statuses worth retrying,
the limits of an event and of a batch, ``ReportError``, reading a refusal's answer (its body,
its ``Retry-After``), and the background mode's HTTP connection (``HttpConnection``; its
websocket: ``socket_transport``)."""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_core import to_json

from contextadmin_sdk.client.refusals import from_api, refusal_fix
from contextadmin_sdk.engine.events import EVENT_FIELDS, EVENT_TYPES, validate_event

logger = logging.getLogger("contextadmin_sdk.client.reporter")  # one logger for the reporter

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0
# The largest request the server takes by default: API_MAX_BODY_BYTES (contextadmin/settings.py)
# for an events POST, Daphne's --websocket-max-message-size (scripts/run) for an ingest frame.
MAX_REQUEST_BYTES = 1_048_576
MAX_BATCH_BYTES = MAX_REQUEST_BYTES // 2
_BATCH_OPEN, _BATCH_CLOSE = b'{"events":[', b"]}"
# One event alone in a batch: anything larger is refused whichever transport carries it (a 413,
# or a socket the server drops without an answer), so no retry could ever deliver it.
MAX_EVENT_BYTES = MAX_REQUEST_BYTES - len(_BATCH_OPEN) - len(_BATCH_CLOSE)


class ReportError(RuntimeError):
    """The server refused a request (a 4xx that retrying cannot fix), or retries ran out."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after  # seconds the server asked to wait (429, 503)


_COMPACT = json.JSONEncoder(separators=(",", ":"))  # json.dumps would build one per call


def encode_record(record: Any) -> bytes:
    """One spool line's or batch's JSON, compact UTF-8 (the caller's thread encodes every event:
    pydantic_core's encoder, one C call; what it cannot encode, a lone surrogate say, the
    standard library's, which escapes it)."""
    try:
        return to_json(record)
    except ValueError:
        return _COMPACT.encode(record).encode()


def event_too_large(data: bytes, *, event_type: Any) -> str | None:
    """Why an encoded event can never be delivered (larger than any request the server takes),
    or None: refused before it takes a seq, so the run's later events still flow."""
    if len(data) <= MAX_EVENT_BYTES:
        return None
    return (
        f"an event of {len(data):,} bytes as JSON ({event_type}) is larger than the server takes "
        f"(at most {MAX_EVENT_BYTES:,} bytes, its {MAX_REQUEST_BYTES:,}-byte request limit): "
        "not reported; send less (a summary, or a reference to the data)"
    )


_TYPES, _FIELDS = frozenset(EVENT_TYPES), frozenset(EVENT_FIELDS)


def event_encode(event: dict[str, Any], *, full: bool = False) -> bytes:
    """The event's JSON; a ``ReportError`` naming what the server would refuse in it (400, or
    413 for its size), raised before it takes a seq so the run's later events still flow.

    Background mode checks what costs next to nothing on the caller's thread (the type, the
    field names, values JSON cannot hold: ``NaN``, bytes, objects); ``full`` (blocking mode)
    the server's whole rule (``validate_event``)."""
    kind = event.get("type")
    if kind not in _TYPES or not _FIELDS.issuperset(event):
        _refuse_if(validate_event(event), kind=kind)
    try:
        data = encode_record(event)
    except (TypeError, ValueError, RecursionError) as exc:
        _refuse_if([f"a value is not JSON ({exc})"], kind=kind)
        raise  # pragma: no cover - _refuse_if raised
    too_large = event_too_large(data, event_type=kind)  # the server's first refusal
    if too_large is not None:
        raise ReportError(too_large, status=413)
    # What the encoders write for a float no JSON parser takes (or only a text saying so: then
    # the check finds nothing); a plain `in` each: this runs for every event of a chat.
    if full or b"NaN" in data or b"Infinity" in data:
        _refuse_if(validate_event(json.loads(data)), kind=kind)  # as the server will read it
    return data


def _refuse_if(problems: list[str], *, kind: Any) -> None:
    if problems:
        raise ReportError(
            f"an event ({kind}) the server would refuse: {'; '.join(problems)}: not reported",
            status=400,
        )


def token_check(token: str) -> str:
    """The API token without the whitespace a file or a copy adds (``open(...).read()`` keeps
    the newline, which no header can carry); a ``ValueError`` that never shows the token."""
    if not isinstance(token, str):
        raise ValueError(f"token: an API token (a string), got {type(token).__name__}")
    token = token.strip()
    if any(char.isspace() or not char.isprintable() for char in token):
        raise ValueError(
            "token: it holds whitespace or control characters inside (not shown: a token is a "
            "secret); give it as issued (manage.py create_api_token NAME)"
        )
    return token


def batch_count(records: Iterable[bytes], *, batch_size: int) -> int:
    """How many of ``records`` (encoded events, in seq order) the next batch takes: at most
    ``batch_size`` and ``MAX_BATCH_BYTES``, at least one (``event_too_large`` keeps every event
    small enough to go alone)."""
    count = size = 0
    for data in records:
        size += len(data) + 1
        if count and (count >= batch_size or size > MAX_BATCH_BYTES):
            break
        count += 1
    return count


def batch_body(records: Sequence[bytes]) -> bytes:
    """The events POST's body (and the ingest socket's batch frame) of encoded events."""
    return _BATCH_OPEN + b",".join(records) + _BATCH_CLOSE


def base_url_check(base_url: str) -> str:
    """The server's root URL without its trailing slash; a ``ValueError`` naming ``base_url``
    for one no request could reach the API with (no scheme, or ``/api`` already in it)."""
    parts = urllib.parse.urlsplit(base_url.strip())
    expected = "expected the server's root URL, http://HOST[:PORT] or https://HOST[:PORT]"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base_url: {expected}, got {base_url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"base_url: {expected}, without a query or fragment, got {base_url!r}")
    if "@" in parts.netloc:  # user:password@: never sent as such, and a secret in every log
        shown = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
        raise ValueError(
            f"base_url: {expected}, without credentials (the API takes the token, as a Bearer "
            f"header), got {shown!r} with a user and password before its host (not shown)"
        )
    path = parts.path.rstrip("/")
    if path.rsplit("/", 1)[-1] == "api":
        root = urllib.parse.urlunsplit(parts._replace(path=path[: -len("api")].rstrip("/")))
        raise ValueError(
            f"base_url: {expected}, without /api (the reporter adds /api/... itself), got "
            f"{base_url!r}: use {root!r}"
        )
    return urllib.parse.urlunsplit(parts._replace(path=path))


def retry_after_seconds(exc: urllib.error.HTTPError) -> float | None:
    """Return the server's Retry-After in seconds (capped at a minute), if it sent one."""
    return parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)


def parse_retry_after(value: str | None) -> float | None:
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


def error_body(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read() or b"null")
    except (ValueError, OSError):
        return None


def request_json(
    *,
    base_url: str,
    token: str,
    method: str,
    path: str,
    data: bytes | None,
    retries: int,
    backoff: float,
    max_backoff: float,
    timeout: float,
) -> dict[str, Any]:
    """Blocking mode's request: retried after a network error, a 429 or a 5xx (waiting the
    server's ``Retry-After``, else backing off); a ``ReportError`` once refused or given up."""
    delay = backoff
    last_error: Exception | None = None
    for attempt in range(retries + 1):
        headers = {"Authorization": f"Bearer {token}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(  # noqa: S310  (base_url is the operator's server)
            base_url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                answer: dict[str, Any] = json.loads(response.read())
                return answer
        except urllib.error.HTTPError as exc:
            payload = error_body(exc)
            if exc.code not in RETRYABLE_STATUSES:
                message = payload["error"] if from_api(payload) else None
                if exc.code in (400, 404) and message is None:  # not the API's: a wrong
                    # base_url (404), or a host name the server does not serve (Django's 400)
                    message = f"{exc.reason}; {refusal_fix(exc.code, base_url_wrong=base_url)}"
                raise ReportError(
                    f"{method} {path}: {exc.code} {message or exc.reason}",
                    status=exc.code,
                    body=payload,
                ) from None
            last_error = exc
            wait = retry_after_seconds(exc)  # a 429 or 503 says how long to wait
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
            last_error = exc
            wait = None
        if attempt < retries:
            pause = delay if wait is None else wait
            logger.warning(
                "%s %s failed (%s); retry %d in %.2fs", method, path, last_error, attempt + 1, pause
            )
            time.sleep(pause)
            delay = min(delay * 2, max_backoff)
    raise ReportError(
        f"{method} {path}: gave up after {retries + 1} attempts: {last_error}"
        f"{scheme_hint(last_error, base_url=base_url)}"
    )


def scheme_hint(error: BaseException | None, *, base_url: str) -> str:
    """A hint when ``base_url`` says https and the TLS handshake failed or never finished: a
    plain-http server answers a TLS hello with an HTTP error, or waits for a request line."""
    if not base_url.startswith("https://") or error is None:
        return ""
    reason = getattr(error, "reason", error)  # urllib wraps it in a URLError
    if isinstance(reason, ssl.SSLError) or "handshake" in str(reason).lower():
        return (
            f" (the TLS handshake with {base_url} failed: if the server serves plain HTTP, give "
            "base_url as http://)"
        )
    return ""


class HttpConnection:
    """POSTs on one kept-alive connection, reopened after a failure (urllib would open one per
    request, and its Python overhead is taken from the chat's share of the GIL)."""

    def __init__(self, *, base_url: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(base_url)
        self._factory = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self._netloc = parts.netloc
        self._scheme = parts.scheme
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._connection: http.client.HTTPConnection | None = None

    def post(self, path: str, data: bytes, *, token: str) -> dict[str, Any]:
        """POST ``data`` (JSON) and return the answer; raise ``ReportError`` (with the status
        and ``Retry-After`` of a refusal, without a status when the server is unreachable)."""
        if self._connection is None:
            self._connection = self._factory(self._netloc, timeout=self._timeout)
        connection = self._connection
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        try:
            connection.request("POST", self._prefix + path, body=data, headers=headers)
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            hint = scheme_hint(exc, base_url=f"{self._scheme}://{self._netloc}")
            raise ReportError(f"POST {path}: {exc}{hint}") from None
        if response.status < 300:
            result: dict[str, Any] = json.loads(payload)
            return result
        try:
            body = json.loads(payload or b"null")
        except ValueError:
            body = None
        message = body.get("error") if isinstance(body, dict) else None
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        raise ReportError(
            f"POST {path}: {response.status} {message or response.reason}",
            status=response.status,
            body=body,
            retry_after=parse_retry_after(response.getheader("Retry-After")),
        )

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
