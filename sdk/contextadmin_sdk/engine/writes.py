"""The one rule for run-time writes (docs/engine.md "context_set"), and how an
explicit set of a derived flag is recorded.

``context_set_refusal`` says which rule refuses a ``context_set`` (the ``rule`` a ``warning``
event records, one of ``WARNING_RULES``) and the problem naming the field; the run's fold
(``RunState``), replay, the server's ingest and both AG2 adapters (through
``contextadmin_sdk.integrations.context_sync``) all ask it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .arguments import require_str
from .coercion import redact_credentials
from .events import event_sender
from .format import (
    BASE_FLAGS,
    REDACTED_MARKER,
    RESERVED_NAMES,
    ContextVariablesFile,
    credential_value_reason,
    json_type_name,
    value_matches_type,
    with_article,
)

__all__ = [
    "Refusal",
    "context_set_problem",
    "context_set_refusal",
    "explicit_set_cause",
    "warning_value_problem",
]


@dataclass(frozen=True)
class Refusal:
    """Why a run may not take a ``context_set``: the rule broken (one of ``WARNING_RULES``,
    what a ``warning`` event records) and the problem, naming the field."""

    rule: str
    problem: str


def context_set_refusal(
    config: ContextVariablesFile, name: str, value: Any, *, environment: str
) -> Refusal | None:
    """Say which rule refuses a ``context_set`` of ``name`` to ``value`` (None when it may apply).

    The one rule for run-time writes (docs/engine.md "context_set"): never the
    base (``enterprise_id``, ``workflow_name``, the base flags), never a declarative constant,
    never an undeclared name, never an environment variable in production; a derived flag only
    to a boolean (an explicit set, recorded as a flip); otherwise only a value of the declared
    type, and never a credential-looking one.
    """
    require_str("name", name)
    category = config.categories().get(name)
    if name in RESERVED_NAMES:
        return Refusal("base", f"name: {name} is the run's base: it never changes during a run")
    if name in BASE_FLAGS:
        if environment == "production":
            return Refusal(
                "production", f"name: environment variable {name} is suppressed in production"
            )
        return Refusal("base", (
            f"name: {name} is a base flag read from {BASE_FLAGS[name]} at start: "
            "it never changes during a run"
        ))
    if category is None:
        return Refusal(
            "undeclared", f"name: unknown variable {name} (declare it in the workflow first)"
        )
    if category == "declarative":
        return Refusal(
            "constant",
            f"name: declarative variable {name} is a constant: it never changes during a run",
        )
    if category == "environment" and environment == "production":
        return Refusal(
            "production", f"name: environment variable {name} is suppressed in production"
        )
    declared = next(v.type for _, _, v in config.variables() if v.name == name)
    if not value_matches_type(value, declared):
        return Refusal("type", (
            f"value: {name} takes {with_article(declared)} (the declared type), "
            f"got {json_type_name(value)}"
        ))
    reason = credential_value_reason(value)
    if reason:
        return Refusal("credential", f"value: {reason}; context variables never hold secrets")
    return None


def context_set_problem(
    config: ContextVariablesFile, name: str, value: Any, *, environment: str
) -> str | None:
    """Say why a ``context_set`` of ``name`` to ``value`` is refused (None when it may apply):
    the problem of ``context_set_refusal``, the one rule for run-time writes."""
    refusal = context_set_refusal(config, name, value, environment=environment)
    return refusal.problem if refusal else None


def explicit_set_cause(event: Mapping[str, Any]) -> dict[str, Any]:
    """The cause of a flip made by a ``context_set``: the tool and/or agent that set it."""
    cause: dict[str, Any] = {"type": "context_set"}
    if isinstance(event.get("tool"), str):
        cause["tool"] = event["tool"]
    agent = event_sender(event)
    if agent is not None:
        cause["agent"] = agent
    return cause


def warning_value_problem(value: Any) -> str | None:
    """Say why a ``warning`` may not carry ``value`` (None when it may): a refused value is
    shown on the run page, so a credential-looking one is sent as ``REDACTED_MARKER``."""
    _, reason = redact_credentials(value)
    if reason is None:
        return None
    return (
        f"value: {reason.split(':', 1)[0]}; a warning never holds secrets "
        f"(send {REDACTED_MARKER} instead)"
    )
