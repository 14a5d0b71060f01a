"""Reading raw values into a context: env-value coercion (never raises) and credential
redaction, the rules ``build_context``, supplied contexts and ``context_set`` share."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .format import (
    ENV_NUMBER_MAX_CHARS,
    ENV_VALUE_MAX_CHARS,
    INT64_MAX,
    INT64_MIN,
    REDACTED_MARKER,
    credential_value_reason,
    text_problem,
)

ENV_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
ENV_FALSE_WORDS = frozenset({"0", "false", "no", "off"})
_INTEGER = re.compile(r"[+-]?\d+")
# Unambiguous (one way to match any text), so a failed match never backtracks polynomially.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def env_flag(raw: str | None) -> bool:
    """Coerce an env value to a boolean: only 1/true/yes/on (any case, trimmed) are true."""
    return raw is not None and raw.strip().lower() in ENV_TRUE_WORDS


def is_production(environ: Mapping[str, str]) -> bool:
    """Tell whether ``ENVIRONMENT=production`` (any case, trimmed)."""
    return environ.get("ENVIRONMENT", "").strip().lower() == "production"


def env_coercion(raw: str, type_: str) -> tuple[Any, str | None]:
    """Coerce an env value to the declared type: (value, None), or (None, why it is not one)."""
    if type_ == "boolean":
        return env_flag(raw), None
    if len(raw) > ENV_VALUE_MAX_CHARS:
        return None, f"is longer than {ENV_VALUE_MAX_CHARS} characters"
    problem = text_problem(raw)
    if problem:
        return None, problem
    if type_ not in ("integer", "number"):
        return raw, None
    text = raw.strip()
    if len(text) > ENV_NUMBER_MAX_CHARS:  # int() of a long digit string raises, float() is slow
        return None, f"is not a valid {type_} (longer than {ENV_NUMBER_MAX_CHARS} characters)"
    if _INTEGER.fullmatch(text):
        integer = int(text)
        if not INT64_MIN <= integer <= INT64_MAX:
            return None, f"is not a valid {type_} (outside the signed 64-bit range)"
        return integer, None
    if type_ == "number" and _NUMBER.fullmatch(text) and math.isfinite(number := float(text)):
        return number, None
    return None, f"is not a valid {type_}"


def coerce_env(raw: str, type_: str) -> tuple[bool, Any]:
    """Coerce an env value to the declared type; return (ok, value). Never raises.

    Unparsable, too long (``ENV_VALUE_MAX_CHARS``; ``ENV_NUMBER_MAX_CHARS`` for numbers), outside
    signed 64 bits, or text no database can store: (False, None), and the caller falls back to
    the declared default with a warning (docs/engine.md, *Decisions*).
    """
    if not isinstance(raw, str):
        return False, None
    value, problem = env_coercion(raw, type_)
    return (problem is None), value


def redact_credentials(value: Any) -> tuple[Any, str | None]:
    """Return (value, None), or (``REDACTED_MARKER``, why) when any string in it looks secret.

    A list or object holding one credential-looking string is replaced whole: its other parts
    could be the rest of the same secret (a user beside a password).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            reason = credential_value_reason(item)
            if reason:
                return REDACTED_MARKER, f"{reason}: replaced by {REDACTED_MARKER}"
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value, None

