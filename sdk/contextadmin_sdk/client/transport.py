"""What both reporting modes share on the wire: the statuses worth retrying, the limits of a
batch, ``ReportError``, reading a refusal's answer (its body, its ``Retry-After``), and the
background mode's HTTP connection (``HttpConnection``; its websocket: ``socket_transport``)."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
from typing import Any

from pydantic_core import to_json

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0
MAX_BATCH_BYTES = 512 * 1024  # half the server's default API_MAX_BODY_BYTES


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


class HttpConnection:
    """POSTs on one kept-alive connection, reopened after a failure (urllib would open one per
    request, and its Python overhead is taken from the chat's share of the GIL)."""

    def __init__(self, *, base_url: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(base_url)
        self._factory = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self._netloc = parts.netloc
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
            raise ReportError(f"POST {path}: {exc}") from None
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
