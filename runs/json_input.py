"""Decode the JSON a client sent (an HTTP body or a socket frame), refusing what cannot be
stored, with the field named: the one decoder (and field check) of both ingest paths."""

from __future__ import annotations

from typing import Any

import orjson

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
