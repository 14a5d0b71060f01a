"""Errors a caller can fix, each with its HTTP status and a message naming the field, and the
one renderer that turns them into JSON responses (with every header they carry)."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpResponse

AUTHENTICATE_CHALLENGE = 'Bearer realm="contextadmin"'


class ApiError(Exception):
    """A client error: rendered as JSON ``{"error": message, **extra}`` with ``status``."""

    status = 400

    def __init_subclass__(cls, *, status: int | None = None, **kwargs: Any) -> None:
        """Each kind of error gives its status in its class line: ``(ApiError, status=409)``."""
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status

    def __init__(self, message: str, *, status: int | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        return {"error": self.message, **self.extra}

    def headers(self) -> dict[str, str]:
        """The response headers this error calls for: Retry-After when it says when to retry."""
        if "retry_after" in self.extra:
            return {"Retry-After": str(self.extra["retry_after"])}
        return {}


class BadRequest(ApiError, status=400):
    """The request names a field it got wrong: a value, a type, a missing key."""


class Unauthorized(ApiError, status=401):
    """No token, or one that is not known or was revoked: the client may retry with a good one."""

    def headers(self) -> dict[str, str]:
        return {**super().headers(), "WWW-Authenticate": AUTHENTICATE_CHALLENGE}


class Forbidden(ApiError, status=403):
    """Known, but not allowed: a session without staff, a token scoped to another workflow."""


class NotFound(ApiError, status=404):
    """No such workflow, version or run (or one the caller may not see)."""


class MethodNotAllowed(ApiError, status=405):
    """The path exists; the method does not: the ``Allow`` header lists those that do."""

    def __init__(self, method: str, allowed: tuple[str, ...]) -> None:
        super().__init__(f"method {method} not allowed: use {' or '.join(allowed)}")
        self.allowed = allowed

    def headers(self) -> dict[str, str]:
        return {**super().headers(), "Allow": ", ".join(self.allowed)}


class Conflict(ApiError, status=409):
    """Valid alone, but not now: a seq gap, an ended run, a name taken, a pinned version."""


class TooLarge(ApiError, status=413):
    """Past a size limit (a body, the pinned definitions): the message gives the limit."""


class RateLimited(ApiError, status=429):
    """Past a token's rate (``Retry-After`` says when), running runs or open sockets."""


class Overloaded(ApiError, status=503):
    """The server is behind (runs/shedding.py): retry after ``Retry-After`` seconds; nothing
    was stored."""


def json_response(data: Any, *, status: int = 200) -> HttpResponse:
    """Serialize once with orjson (fast, and it refuses NaN)."""
    return HttpResponse(orjson.dumps(data), status=status, content_type="application/json")


def error_response(exc: ApiError) -> HttpResponse:
    """Render an ApiError as its JSON 4xx, with every header it carries (Retry-After, ...)."""
    response = json_response(exc.as_dict(), status=exc.status)
    for name, value in exc.headers().items():
        response[name] = value
    return response
