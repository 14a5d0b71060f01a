"""What both reporting modes share on the wire: the statuses worth retrying, the limits of a
batch, ``ReportError``, and reading a refusal's answer (its body, its ``Retry-After``)."""

from __future__ import annotations

import json
import urllib.error
from typing import Any

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
    """One spool line's or batch's JSON, compact (the caller's thread encodes every event)."""
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
