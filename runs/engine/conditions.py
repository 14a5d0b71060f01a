"""Hand-off conditions at run time: validate against a config, evaluate, and report readiness.

The grammar itself (``${a}`` or ``${a} and ${b}``, strict) belongs to the format
(``format.condition_names``); this module applies it to a run's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .arguments import require_config, require_mapping, require_str
from .format import (
    ROUTABLE_CATEGORIES,
    ConditionError,
    ContextVariablesFile,
    condition_names,
    condition_problems,
    parse_config,
)

__all__ = [
    "NEVER_IN_PRODUCTION",
    "ROUTABLE_CATEGORIES",
    "ConditionError",
    "condition_names",
    "evaluate_condition",
    "handoffs_readiness",
    "validate_condition",
]

NEVER_IN_PRODUCTION = "never in production: environment variables are suppressed"


def _categories(config: Any) -> Mapping[str, str]:
    """Map variable name -> category for a parsed config, a raw dict, or a ready mapping."""
    categories_of = getattr(config, "categories", None)
    if callable(categories_of):
        result: Mapping[str, str] = categories_of()
        return result
    if isinstance(config, Mapping) and "context_variables" not in config:
        return config
    return parse_config(config).config.categories()


def validate_condition(expr: str, config: Any) -> list[str]:
    """Return what is wrong with a hand-off condition for this config ([] when valid).

    ``config`` is a parsed ``ContextVariablesFile``, a raw ``context_variables.json`` mapping, or
    a mapping of variable name -> category.
    """
    require_config("config", config)
    return condition_problems(expr, _categories(config))


def evaluate_condition(expr: str, values: Mapping[str, Any]) -> bool:
    """Return whether a (grammatically valid) condition holds for these context values.

    A missing variable counts as false: in production the environment flags are absent, which
    is exactly how seed 000 prevents environment-gated hand-offs there.
    """
    require_str("expr", expr)
    require_mapping("values", values)
    return all(bool(values.get(name)) for name in condition_names(expr))


def handoffs_readiness(
    config: ContextVariablesFile, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Return each hand-off rule with whether it holds now, for the inspector to display.

    ``status`` is ``holds``, ``not yet``, or ``never`` when the condition names a variable the
    run's context does not hold (an environment variable in production): such a rule can never
    fire in this run, and ``reason`` says why.
    """
    if not isinstance(config, ContextVariablesFile):
        raise TypeError(
            f"config: must be a ContextVariablesFile (load_config(...).config), "
            f"not {type(config).__name__}"
        )
    require_mapping("values", values)
    categories = config.categories()
    rows: list[dict[str, Any]] = []
    for index, handoff in enumerate(config.handoffs):
        names = condition_names(handoff.condition)
        absent = [name for name in names if name not in values]
        holds = not absent and all(bool(values[name]) for name in names)
        reason = None
        if absent:
            environment_only = all(categories.get(name) == "environment" for name in absent)
            reason = (
                NEVER_IN_PRODUCTION
                if environment_only
                else f"never in this run: {', '.join(absent)} not in its context"
            )
        rows.append(
            {
                "index": index,
                "source_agent": handoff.source_agent,
                "target_agent": handoff.target_agent,
                "condition": handoff.condition,
                "description": handoff.description,
                "status": "holds" if holds else ("never" if absent else "not yet"),
                "reason": reason,
                "values": [
                    {"name": name, "present": name in values, "value": values.get(name)}
                    for name in names
                ],
            }
        )
    return rows
