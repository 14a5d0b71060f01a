"""Hand-off conditions: parse, validate and evaluate (seed 000 "Handoff Routing Constraints").

A condition is an AG2 ``ContextExpression`` restricted to ``${a}`` or ``${a} and ${b}``: positive,
conjunctive (at most one ``and``), over environment and derived variables only. Anything valid
here is therefore also a valid AG2 ``ContextExpression``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ROUTABLE_CATEGORIES",
    "ConditionError",
    "condition_names",
    "evaluate_condition",
    "validate_condition",
]

ROUTABLE_CATEGORIES = frozenset({"environment", "derived"})
MAX_CONDITION_LENGTH = 500

_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_NEGATION = re.compile(r"(?:^|[\s(])(?:not)(?=[\s$(])|!", re.IGNORECASE)
_OR = re.compile(r"(?:^|\s)or(?=\s)|\|\|", re.IGNORECASE)
_COMPARISON = re.compile(r"==|!=|<=|>=|<|>|=")
_FUNCTION = re.compile(r"\b(?:len|any|all)\s*\(|\w+\s*\(")


class ConditionError(ValueError):
    """A hand-off condition that breaks the grammar."""


def condition_names(expr: str) -> tuple[str, ...]:
    """Return the variable names a condition references, or raise ConditionError saying why."""
    if not isinstance(expr, str):
        raise ConditionError("a condition must be a string like ${interview_complete}")
    text = expr.strip()
    if not text:
        raise ConditionError("a condition may not be empty")
    if len(text) > MAX_CONDITION_LENGTH:
        raise ConditionError(f"a condition may be at most {MAX_CONDITION_LENGTH} characters")
    outside = _REFERENCE.sub(" ", text)
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
    parts = [part.strip() for part in re.split(r"\s+and\s+", text, flags=re.IGNORECASE)]
    if len(parts) > 2:
        raise ConditionError('at most one "and" is allowed: ${a} or ${a} and ${b}')
    names: list[str] = []
    for part in parts:
        match = re.fullmatch(r"\$\{([^}]*)\}", part)
        if match is None:
            raise ConditionError(
                f"expected ${{name}} or ${{a}} and ${{b}}, got {part!r}"
                if part
                else 'expected ${name} on both sides of "and"'
            )
        name = match.group(1).strip()
        if not _NAME.match(name):
            raise ConditionError(f"{name!r} is not a lower_snake_case variable name")
        names.append(name)
    if len(names) == 2 and names[0] == names[1]:
        raise ConditionError(f"{names[0]} is referenced twice")
    return tuple(names)


def _categories(config: Any) -> Mapping[str, str]:
    """Map variable name -> category for a parsed config, a raw dict, or a ready mapping."""
    categories_of = getattr(config, "categories", None)
    if callable(categories_of):
        result: Mapping[str, str] = categories_of()
        return result
    if isinstance(config, Mapping) and "context_variables" not in config:
        return config
    from contextadmin.schema import parse_config  # lazy: schema validates conditions with us

    return parse_config(config).config.categories()


def validate_condition(expr: str, config: Any) -> list[str]:
    """Return what is wrong with a hand-off condition for this config ([] when valid).

    ``config`` is a parsed ``ContextVariablesFile``, a raw ``context_variables.json`` mapping, or
    a mapping of variable name -> category.
    """
    try:
        names = condition_names(expr)
    except ConditionError as exc:
        return [str(exc)]
    categories = _categories(config)
    errors: list[str] = []
    for name in names:
        category = categories.get(name)
        if category is None:
            errors.append(
                f"unknown variable {name}: declare it as an environment or derived variable"
            )
        elif category not in ROUTABLE_CATEGORIES:
            errors.append(
                f"{category} variable {name} cannot route: "
                "only environment and derived variables can"
            )
    return errors


def evaluate_condition(expr: str, values: Mapping[str, Any]) -> bool:
    """Return whether a (grammatically valid) condition holds for these context values.

    A missing variable counts as false: in production the environment flags are absent, which
    is exactly how seed 000 prevents environment-gated hand-offs there.
    """
    return all(bool(values.get(name)) for name in condition_names(expr))
