"""Parsing a decoded (or raw) ``context_variables.json`` into a checked config: storable text
first, the legacy and flat keys next, the models, then the cross-field rules."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .checks import config_problems
from .errors import ConfigError, ConfigIssue, ParsedConfig
from .limits import (
    ENV_VAR_PATTERN,
    INT64_MAX,
    INT64_MESSAGE,
    INT64_MIN,
    LEGACY_KEYS,
    NAME_PATTERN,
)
from .models import (
    TRIGGER_TYPES,
    ContextVariablesFile,
)
from .values import (
    text_problem,
)


def _clean_loc(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    # Discriminated unions add the tag (``agent_text``) after the list index; drop it.
    cleaned: list[str | int] = []
    for index, part in enumerate(loc):
        if (
            isinstance(part, str) and index and isinstance(loc[index - 1], int)
            and part in TRIGGER_TYPES
        ):
            continue
        if (
            isinstance(part, str)
            and part.startswith(("function-", "union[", "bool", "int", "float", "str"))
            and cleaned
            and cleaned[-1] in ("value", "default")
        ):
            continue
        cleaned.append(part)
    return tuple(cleaned)


_MESSAGES = {
    "missing": "field required",
    "extra_forbidden": "unknown field",
    "literal_error": None,  # pydantic's text already lists the allowed values
}


def _issue_from_pydantic(error: Mapping[str, Any]) -> ConfigIssue:
    message = _MESSAGES.get(error["type"]) or str(error["msg"])
    message = message.removeprefix("Value error, ")
    if error["type"] == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern")
        if pattern == NAME_PATTERN:
            message = (
                "must be lower_snake_case (a-z, 0-9, single underscores, starting with a letter)"
            )
        elif pattern == ENV_VAR_PATTERN:
            message = (
                "must be an environment variable name (A-Z, 0-9 and _, not starting with a digit)"
            )
    elif error["type"] == "union_tag_invalid":
        message = f"unknown trigger type; expected one of {', '.join(TRIGGER_TYPES)}"
    elif error["type"] == "union_tag_not_found":
        message = f"field required: type (one of {', '.join(TRIGGER_TYPES)})"
    message = message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message
    return ConfigIssue(_clean_loc(tuple(error["loc"])), message)


def _dedupe(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    out = []
    for issue in issues:
        key = (issue.loc, issue.message)
        if key not in seen:
            seen.add(key)
            out.append(issue)
    return out


# -- parsing ----------------------------------------------------------------------------------
MAX_UNSTORABLE_ISSUES = 20



def _unstorable(data: Any) -> list[ConfigIssue]:
    """Find strings (and keys) no UTF-8 file or database can hold, and over-long integers.

    Checked before anything else, so no later message, page or export has to render them.
    """
    issues: list[ConfigIssue] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack and len(issues) < MAX_UNSTORABLE_ISSUES:
        loc, value = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                issues.append(ConfigIssue(loc, problem))
        elif isinstance(value, int) and not isinstance(value, bool):
            if not INT64_MIN <= value <= INT64_MAX:
                issues.append(ConfigIssue(loc, INT64_MESSAGE))
        elif isinstance(value, Mapping):
            children: list[tuple[tuple[str | int, ...], Any]] = []
            for key, child in value.items():
                problem = text_problem(key) if isinstance(key, str) else None
                if problem:
                    shown = key.encode("utf-8", "backslashreplace").decode()
                    shown = shown.replace("\x00", "\\x00")
                    issues.append(ConfigIssue((*loc, shown), f"this key {problem}"))
                else:
                    children.append(((*loc, key), child))
            stack.extend(reversed(children))
        elif isinstance(value, list | tuple):
            stack.extend(reversed([((*loc, index), child) for index, child in enumerate(value)]))
    return issues


def _normalize(data: Any, warnings: list[str]) -> Any:
    """Accept the legacy ``variables`` key (warn, ignore) and flat ``derived_variables``."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            [ConfigIssue((), "the document must be a JSON object with context_variables")]
        )
    data = dict(data)
    section = data.get("context_variables", {})
    if not isinstance(section, Mapping):
        raise ConfigError([ConfigIssue(("context_variables",), "must be an object")])
    section = dict(section)
    for key in LEGACY_KEYS:
        for where, holder in (("", data), ("context_variables.", section)):
            if key in holder:
                holder.pop(key)
                warnings.append(f"{where}{key}: legacy key ignored (use the four category lists)")
    if "derived_variables" in data:
        flat = data.pop("derived_variables")
        if "derived_variables" in section:
            raise ConfigError([ConfigIssue(
                ("derived_variables",),
                "given both flat and under context_variables: keep one",
            )])
        section["derived_variables"] = flat
    data["context_variables"] = section
    return data


class _Ambiguous(ValueError):
    """What a file says twice (a key) or cannot say at all (an integer past 64 bits)."""


def _object_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: with a key twice, which one a reader
    keeps is up to the reader (the last, here), so the file is refused instead."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Ambiguous(f"the key {key[:80]!r} is given twice in one object: keep one")
            seen.add(key)
    return result


def _int_in_range(digits: str) -> int:
    """An integer literal, refused before conversion when no 64-bit integer is that long (the
    conversion of a huge one is slow, and Python refuses past 4,300 digits)."""
    count = len(digits.lstrip("-"))
    if count > 19:
        raise _Ambiguous(f"an integer of {count:,} digits: integers {INT64_MESSAGE}")
    return int(digits)


def _document_loads(data: bytes | str) -> Any:
    """Decode a document's JSON, refusing keys given twice and integers past 64 bits."""
    return json.loads(data, object_pairs_hook=_object_once, parse_int=_int_in_range)


def parse_config(data: Any) -> ParsedConfig:
    """Validate a decoded ``context_variables.json`` (or its bytes/str) into a config."""
    warnings: list[str] = []
    if isinstance(data, bytes | str):
        try:
            data = _document_loads(data)
        except _Ambiguous as exc:
            raise ConfigError([ConfigIssue((), f"not accepted: {exc}")]) from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            raise ConfigError([ConfigIssue((), f"not valid JSON: {exc}")]) from None
        except RecursionError:
            raise ConfigError([ConfigIssue((), "the document is nested too deeply")]) from None
    unstorable = _unstorable(data)
    if unstorable:
        raise ConfigError(unstorable)
    data = _normalize(data, warnings)
    try:
        config = ContextVariablesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_dedupe([_issue_from_pydantic(e) for e in exc.errors()])) from None
    except RecursionError:
        raise ConfigError([ConfigIssue((), "the document is nested too deeply")]) from None
    problems = config_problems(config)
    if problems:
        raise ConfigError(problems)
    return ParsedConfig(config, warnings)
