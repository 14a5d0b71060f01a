"""Checks of single values the format and the engine take in: env-var names, credentials,
plain JSON, declared types and storable text. Each says why, in words an operator reads."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .limits import (
    _CREDENTIAL_SHAPES,
    _SECRET_ENV_SUBSTRINGS,
    _SECRET_ENV_WORDS,
    _SECRET_QUERY,
    _URL_AUTHORITY,
    INT64_MAX,
    INT64_MESSAGE,
    INT64_MIN,
    JSON_MAX_DEPTH,
    SECRET_ENV_REASON,
    SERVER_ENV_REASON,
    SERVER_ENV_VARS,
)


def env_var_problem(env_var: str) -> str | None:
    """Say why a context variable may not read this env var (None when it may).

    Refused: the server's own settings (``SERVER_ENV_VARS``), and credential-shaped names:
    ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``, ``*PRIVATE*``,
    and the words ``KEY(S)``, ``APIKEY``, ``PASS``, ``PWD``, ``AUTH``, ``DSN``... Names ending
    in ``_URL``/``_URI`` are allowed; their values are checked at read time
    (``credential_value_reason``).
    """
    upper = env_var.upper()
    if upper in SERVER_ENV_VARS:
        return f"{env_var} {SERVER_ENV_REASON}"
    words = upper.split("_")
    if _SECRET_ENV_SUBSTRINGS.search(upper) or _SECRET_ENV_WORDS.intersection(words):
        return f"{env_var} {SECRET_ENV_REASON}"
    return None


def is_secret_env_var(env_var: str) -> bool:
    """Tell whether a context variable may never read this env var (see ``env_var_problem``)."""
    return env_var_problem(env_var) is not None


def credential_value_reason(value: Any) -> str | None:
    """Say why a value looks like a credential (None when it does not); never raises.

    Checked where values are read (env vars, database fields, supplied contexts): a URL with
    userinfo (``scheme://user:password@host``), a secret query parameter (``?token=``), a PEM
    block, and a few well-known token shapes. Such a value is never put in a context or shown.
    """
    if not isinstance(value, str):
        return None
    for match in _URL_AUTHORITY.finditer(value):
        if "@" in match.group(1):
            return "looks like a credential (a URL with userinfo, e.g. a password)"
    if _SECRET_QUERY.search(value):
        return "looks like a credential (a URL with a secret query parameter)"
    for pattern, shape in _CREDENTIAL_SHAPES:
        if pattern.search(value):
            return f"looks like a credential ({shape})"
    return None


def json_value_problem(value: Any, *, max_depth: int = JSON_MAX_DEPTH) -> str | None:
    """Say why a value is not plain, storable JSON (None when it is); iterative: any depth.

    JSON here means what every store and consumer of a run takes: null, strings, booleans,
    signed 64-bit integers, finite numbers, lists and string-keyed objects, nested at most
    ``max_depth`` levels (deeper values would overflow the recursive JSON encoders).
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if item is None or isinstance(item, str | bool):
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                return INT64_MESSAGE
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return "must be a finite number"
            continue
        children: list[Any]
        if isinstance(item, list | tuple):
            children = list(item)
        elif isinstance(item, Mapping):
            if not all(isinstance(key, str) for key in item):
                return "object keys must be strings"
            children = list(item.values())
        else:
            return f"must be JSON (got {type(item).__name__})"
        if depth >= max_depth:
            return f"nested more than {max_depth} levels"
        stack.extend((child, depth + 1) for child in reversed(children))
    return None


def json_nesting_exceeds(value: Any, limit: int = JSON_MAX_DEPTH) -> bool:
    """Tell whether lists/objects nest deeper than ``limit`` levels (iterative: any depth)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def value_matches_type(value: Any, type_: str) -> bool:
    """Tell whether a JSON primitive is of the declared type (a bool is not an integer)."""
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "number":
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
    return isinstance(value, str)


def with_article(type_: str) -> str:
    """Prefix a noun with its article: ``an integer``, ``a string``."""
    return f"an {type_}" if type_[0] in "aeiou" else f"a {type_}"



def json_type_name(value: Any) -> str:
    """Name a decoded JSON value's type the way an operator reads it."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float) and not math.isfinite(value):
        return "a non-finite number"
    return with_article(type_of_value(value))


def type_of_value(value: Any) -> str:
    """Infer the declared type of a primitive (for declarative entries that omit ``type``)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"



def text_problem(text: str) -> str | None:
    """Say why no UTF-8 file or database can store this text (NUL, lone surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which databases cannot store"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (\\ud800-\\udfff): not valid Unicode text"
    return None
