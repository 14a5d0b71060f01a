"""Errors a caller can fix: each carries its HTTP status and a message naming the field."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A client error: rendered as JSON ``{"error": message, **extra}`` with ``status``."""

    status = 400

    def __init__(self, message: str, *, status: int | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        return {"error": self.message, **self.extra}


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class TooLarge(ApiError):
    status = 413


class RateLimited(ApiError):
    status = 429
