"""Decode the JSON a client sent (an HTTP body or a socket frame), refusing what cannot be
stored, with the field named: the one decoder (and field check) of both ingest paths; and the
one reader of a date and time a client gives (a search, an imported run's header)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contextadmin.errors import BadRequest


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


def datetime_decode(raw: str, *, what: str) -> dt.datetime:
    """Read an ISO 8601 date and time (UTC unless it gives an offset), refusing by ``what``
    one that is malformed or well formed but impossible (February 30th, hour 25, +25:00)."""
    expected = f"{what}: expected a date and time like 2026-01-31T12:00, got {raw[:40]!r}"
    try:
        parsed = parse_datetime(raw)
        if parsed is None:
            raise BadRequest(expected)
        aware = timezone.make_aware(parsed, dt.UTC) if timezone.is_naive(parsed) else parsed
        aware.astimezone(dt.UTC)  # year 1 at +01:00 is before the first instant in UTC
    except (ValueError, OverflowError):
        raise BadRequest(f"{expected}: no such date or time") from None
    return aware


def fields_check(body: dict[str, Any], *, allowed: set[str]) -> None:
    """Refuse a body (a POST's, or a socket's batch frame) with a field it does not take."""
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise BadRequest(f"{unknown[0]}: unknown field (expected {', '.join(sorted(allowed))})")


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
