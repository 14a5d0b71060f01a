"""The hand-off condition grammar (seed 000 "Handoff Routing Constraints"): ``${a}`` or
``${a} and ${b}``, naming environment or derived variables only."""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Mapping
from typing import Any

from .limits import NAME_PATTERN

MAX_CONDITION_LENGTH = 500
ROUTABLE_CATEGORIES = frozenset({"environment", "derived"})

_NAME_BODY = NAME_PATTERN[1:-1]
_STRICT_CONDITION = re.compile(rf"\$\{{({_NAME_BODY})\}}(?: and \$\{{({_NAME_BODY})\}})?")
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_NEGATION = re.compile(r"(?:^|[\s(])(?:not)(?=[\s$(])|!", re.IGNORECASE)
_OR = re.compile(r"(?:^|\s)or(?=\s)|\|\|", re.IGNORECASE)
_COMPARISON = re.compile(r"==|!=|<=|>=|<|>|=")
_FUNCTION = re.compile(r"\b(?:len|any|all)\s*\(|\w+\s*\(")
_AND = re.compile(r"\band\b", re.IGNORECASE)


class ConditionError(ValueError):
    """A hand-off condition that breaks the grammar."""


def condition_names(expr: Any) -> tuple[str, ...]:
    """Return the variable names of a condition, or raise ConditionError saying why.

    Only the strict form is accepted: exactly ``${a}`` or ``${a} and ${b}`` (single spaces,
    lower-case ``and``, nothing inside ``${}`` but the name). That is the form AG2's own
    ``ContextExpression`` parses, so a condition valid here is valid there.
    """
    if not isinstance(expr, str):
        raise ConditionError("a condition must be a string like ${interview_complete}")
    return _condition_names(expr)


@functools.lru_cache(maxsize=1024)
def _condition_names(expr: str) -> tuple[str, ...]:
    # Parsed once per distinct condition: the routers evaluate them on every hand-off, and a
    # refused one raises (not cached), so the cache holds valid conditions of <= 500 chars.
    if not expr.strip():
        raise ConditionError("a condition may not be empty")
    if len(expr) > MAX_CONDITION_LENGTH:
        raise ConditionError(f"a condition may be at most {MAX_CONDITION_LENGTH} characters")
    strict = _STRICT_CONDITION.fullmatch(expr)
    if strict is not None:
        names = tuple(name for name in strict.groups() if name is not None)
        for name in names:
            if keyword.iskeyword(name):
                raise ConditionError(f"{name} is a Python keyword, not a variable name")
        if len(names) == 2 and names[0] == names[1]:
            raise ConditionError(f"{names[0]} is referenced twice")
        return names
    outside = _REFERENCE.sub(" ", expr)
    if _NEGATION.search(outside):
        raise ConditionError('"not" is not allowed: conditions are positive')
    if _OR.search(outside):
        raise ConditionError('"or" is not allowed: conditions are conjunctive (at most one "and")')
    if _COMPARISON.search(outside):
        raise ConditionError(
            "comparisons are not allowed: reference boolean flags as ${name}, nothing else"
        )
    if _FUNCTION.search(outside):
        raise ConditionError("functions are not allowed: reference boolean flags as ${name}")
    if len(_AND.findall(outside)) > 1:
        raise ConditionError('at most one "and" is allowed: ${a} or ${a} and ${b}')
    for inner in _REFERENCE.findall(expr):
        if inner != inner.strip():
            raise ConditionError(f"no spaces inside ${{}}: write ${{{inner.strip()}}}")
        if not re.fullmatch(_NAME_BODY, inner):
            raise ConditionError(f"{inner!r} is not a lower_snake_case variable name")
    if expr != expr.strip():
        raise ConditionError("no spaces or line breaks before or after the condition")
    if _AND.search(outside) and len(_REFERENCE.findall(expr)) != 2:
        raise ConditionError('expected ${name} on both sides of "and": ${a} and ${b}')
    if _AND.search(outside):
        raise ConditionError(
            'write the conjunction as ${a} and ${b}: lower-case "and", one space on each side'
        )
    raise ConditionError("expected ${name} or ${a} and ${b}")


def condition_problems(expr: Any, categories: Mapping[str, str]) -> list[str]:
    """Return what is wrong with a condition given the workflow's name -> category ([] if valid)."""
    try:
        names = condition_names(expr)
    except ConditionError as exc:
        return [str(exc)]
    problems: list[str] = []
    for name in names:
        category = categories.get(name)
        if category is None:
            problems.append(
                f"unknown variable {name}: declare it as an environment or derived variable"
            )
        elif category not in ROUTABLE_CATEGORIES:
            problems.append(
                f"{category} variable {name} cannot route: "
                "only environment and derived variables can"
            )
    return problems
