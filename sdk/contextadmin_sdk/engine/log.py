"""Safe logging for the engine: one logger, short previews, never a secret's value.

Seed 000 step 7: "safe summaries (length limited) are emitted for observability without
leaking large blobs or secrets". Every value that reaches a log line goes through ``preview``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .format import (
    JSON_MAX_DEPTH,
    credential_value_reason,
    is_secret_env_var,
    json_nesting_exceeds,
)

__all__ = [
    "PREVIEW_MAX_CHARS",
    "REDACTED",
    "context_diff",
    "logger",
    "preview",
    "replaying",
    "replaying_now",
    "safe_preview",
]

logger = logging.getLogger("contextadmin_sdk.engine")
_replaying: ContextVar[bool] = ContextVar("contextadmin_sdk_replaying", default=False)

PREVIEW_MAX_CHARS = 80  # a log line shows at most this much of any one value
REDACTED = "<redacted>"


def preview(value: Any, *, limit: int = PREVIEW_MAX_CHARS) -> str:
    """Render a value as one short JSON-ish line so blobs and newlines never flood a log.

    Never raises: a value nested deeper than JSON_MAX_DEPTH, or one JSON cannot render (an
    integer beyond Python's int-to-str digit limit), is named by its type instead.
    """
    if json_nesting_exceeds(value, JSON_MAX_DEPTH):
        return f"<{type(value).__name__} nested more than {JSON_MAX_DEPTH} levels>"
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except (ValueError, TypeError, RecursionError):  # huge ints, mixed key types, str() raising
        return f"<{type(value).__name__} that cannot be previewed>"
    if not text.isascii():  # a lone surrogate (undecodable bytes in an env var) breaks every
        text = text.encode("utf-8", "backslashreplace").decode()  # UTF-8 log and JSON store
    if len(text) > limit:
        return f"{text[:limit]}… ({len(text)} chars)"
    return text


def safe_preview(value: Any, *, env_var: str | None = None) -> str:
    """Preview a value, redacted when its env var's name or the value itself looks secret."""
    if env_var is not None and is_secret_env_var(env_var):
        return REDACTED
    if credential_value_reason(value):
        return REDACTED
    return preview(value)


def context_diff(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    secret_names: frozenset[str] = frozenset(),
) -> list[str]:
    """List what changed between two contexts as ``+name=…``, ``-name``, ``~name: a -> b``."""

    def show(name: str, value: Any) -> str:
        return REDACTED if name in secret_names else safe_preview(value)

    lines = []
    for name, value in after.items():
        if name not in before:
            lines.append(f"+{name}={show(name, value)}")
        elif before[name] != value:
            lines.append(f"~{name}: {show(name, before[name])} -> {show(name, value)}")
    lines.extend(f"-{name}" for name in before if name not in after)
    return lines


@contextmanager
def replaying() -> Iterator[None]:
    """Fold events that already happened (a replay, a resumed run's spool) without logging
    their flips again: a log line says a flag flipped *now*, once per run."""
    token = _replaying.set(True)
    try:
        yield
    finally:
        _replaying.reset(token)


def replaying_now() -> bool:
    """Whether this thread (or task) is inside ``replaying()``."""
    return _replaying.get()
