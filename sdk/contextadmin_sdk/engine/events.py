"""Run events (docs/api.md): their shape, and the problems of a malformed one.

An event is a mapping: ``{"type": "agent_text"|"tool_response"|"context_set"|"run_status"|
"handoff"|"warning", "agent"?, "text"?, "tool"?, "status"?, "data"?, "name"?, "value"?,
"target"?, "rule"?, "seq"?}``. A ``handoff`` is the edge ``agent`` -> ``target`` the runtime took,
optionally with the index of the hand-off ``rule`` that fired (seed 004's execution path). A
``warning`` records a change the chat made that the run may not take (nothing is dropped
silently): the variable ``name``, the refused ``value``, the ``agent`` and/or ``tool`` that
tried, the ``rule`` it broke (one of ``WARNING_RULES``) and optionally the problem as ``text``.
``sender`` is accepted as an alias of ``agent`` (AG2 calls it that); a sender may be a string, an
object with ``.name`` or a mapping with ``"name"``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .format import (
    IDENTIFIER_MAX_CHARS,
    INT64_MAX,
    JSON_MAX_DEPTH,
    NAME_MAX_CHARS,
    json_value_problem,
)

__all__ = [
    "EVENT_FIELDS",
    "EVENT_TYPES",
    "JSON_MAX_DEPTH",
    "RUN_STATUSES",
    "TEXT_MAX_CHARS",
    "WARNING_RULES",
    "event_sender",
    "validate_event",
]

EVENT_TYPES: tuple[str, ...] = (
    "agent_text",
    "tool_response",
    "context_set",
    "run_status",
    "handoff",
    "warning",
)
EVENT_FIELDS: tuple[str, ...] = (
    "type",
    "seq",
    "agent",
    "sender",
    "text",
    "tool",
    "status",
    "data",
    "name",
    "value",
    "target",
    "rule",
)
RUN_STATUSES: tuple[str, ...] = ("running", "paused", "completed", "failed", "cancelled")
_EVENT_FIELD_SET = frozenset(EVENT_FIELDS)  # membership on every event: a set, not a tuple scan
# The rules a refused context_set broke (contextadmin_sdk.engine.state.context_set_refusal names
# them).
WARNING_RULES: tuple[str, ...] = (
    "base",  # enterprise_id, workflow_name and the base flags never change during a run
    "constant",  # a declarative variable is a constant
    "production",  # an environment variable (or base flag) is suppressed in production
    "undeclared",  # the workflow does not declare the name
    "type",  # not a value of the declared type (a derived flag takes a boolean only)
    "credential",  # a credential-looking value: context variables never hold secrets
    "deleted",  # the chat deleted a declared variable: never deleted during a run (value null)
)
TEXT_MAX_CHARS = 100_000  # one agent message; longer text is a blob, not a chat turn


def event_sender(event: Mapping[str, Any]) -> str | None:
    """Return the name of ``agent`` (or ``sender``): a string, ``.name`` or ``["name"]``."""
    sender = event.get("agent")
    if sender is None:
        sender = event.get("sender")
    if sender is None or isinstance(sender, str):
        return sender
    name = sender.get("name") if isinstance(sender, Mapping) else getattr(sender, "name", None)
    return name if isinstance(name, str) else None


def _identifier_problem(field: str, value: Any, *, required_for: str | None) -> str | None:
    if value is None:
        return f"{field}: required for {required_for}" if required_for else None
    if not isinstance(value, str) or not value.strip():
        return f"{field}: must be a non-empty string"
    if len(value) > IDENTIFIER_MAX_CHARS:
        return f"{field}: at most {IDENTIFIER_MAX_CHARS} characters"
    return None


def _json_problem(field: str, value: Any) -> str | None:
    """Say why ``value`` is not plain JSON (or is nested too deeply), naming the field."""
    problem = json_value_problem(value)
    return f"{field}: {problem}" if problem else None


def _name_problem(event: Mapping[str, Any], *, required_for: str) -> str | None:
    name = event.get("name")
    if name is None:
        return f"name: required for {required_for}"
    if not isinstance(name, str) or not name or len(name) > NAME_MAX_CHARS:
        return f"name: must be a variable name (at most {NAME_MAX_CHARS} characters)"
    return None


def _choice_problem(
    field: str, value: Any, choices: Collection[str], *, required: str
) -> str | None:
    """A field that takes one of ``choices``: missing (``required`` says for what) or another."""
    if value is None:
        return f"{field}: required{required} (one of {', '.join(choices)})"
    if value not in choices:
        return f"{field}: must be one of {', '.join(choices)}"
    return None


def _warning_problems(event: Mapping[str, Any]) -> list[str]:
    problems = []
    problem = _name_problem(event, required_for="warning")
    if problem:
        problems.append(problem)
    if "value" not in event:
        problems.append("value: required for warning (the value that was refused)")
    rule = _choice_problem("rule", event.get("rule"), WARNING_RULES, required=" for warning")
    if rule:
        problems.append(rule)
    text = event.get("text")
    if text is not None and (not isinstance(text, str) or len(text) > TEXT_MAX_CHARS):
        problems.append(f"text: must be a string of at most {TEXT_MAX_CHARS} characters")
    tool = _identifier_problem("tool", event.get("tool"), required_for=None)
    if tool:
        problems.append(tool)
    return problems


# The fields of the two events a chat reports on every turn, when given in their plain form.
_TEXT_FIELDS = frozenset(("type", "agent", "text", "seq"))
_HANDOFF_FIELDS = frozenset(("type", "agent", "target", "rule", "seq"))


def _plain_turn_event(event: dict[str, Any]) -> bool:
    """Whether ``event`` is an ``agent_text`` or ``handoff`` in its plain form (string names, no
    alias) that ``validate_event`` accepts: a shortcut for the events of every turn, which an
    adapter reports on the chat's own thread. Only ever True where the full rules find nothing
    (a property test holds it to that); anything else takes the full rules."""
    agent = event.get("agent")
    if type(agent) is not str or not agent.strip() or len(agent) > IDENTIFIER_MAX_CHARS:
        return False
    seq = event.get("seq", 1)
    if type(seq) is not int or not 1 <= seq <= INT64_MAX:
        return False
    type_ = event.get("type")
    if type_ == "agent_text":
        text = event.get("text")
        return (
            type(text) is str and len(text) <= TEXT_MAX_CHARS and _TEXT_FIELDS.issuperset(event)
        )
    if type_ == "handoff":
        target, rule = event.get("target"), event.get("rule", 0)
        return (
            type(target) is str
            and bool(target.strip())
            and len(target) <= IDENTIFIER_MAX_CHARS
            and type(rule) is int
            and 0 <= rule <= INT64_MAX
            and _HANDOFF_FIELDS.issuperset(event)
        )
    return False


def validate_event(event: Any) -> list[str]:
    """Return what is wrong with an event ([] when valid); each problem names its field."""
    if type(event) is dict and _plain_turn_event(event):
        return []
    if not isinstance(event, Mapping):
        return ["event: must be an object"]
    problems = [] if _EVENT_FIELD_SET.issuperset(event) else [
        f"{key}: unknown field (allowed: {', '.join(EVENT_FIELDS)})"
        for key in event
        if key not in _EVENT_FIELD_SET
    ]
    type_ = event.get("type")
    type_problem = _choice_problem("type", type_, EVENT_TYPES, required="")
    if type_problem:
        problems.append(type_problem)
    seq = event.get("seq")
    if "seq" in event and (
        not isinstance(seq, int) or isinstance(seq, bool) or not 1 <= seq <= INT64_MAX
    ):
        problems.append(f"seq: must be a whole number from 1 to {INT64_MAX:,}")

    if "agent" in event and "sender" in event:  # one name per event: never store an unchecked one
        problems.append("sender: give agent or sender (its alias), not both")
    sender_given = event.get("agent", event.get("sender"))
    sender = event_sender(event)
    sender_field = "agent" if "agent" in event or "sender" not in event else "sender"
    sender_problem = None if isinstance(sender_given, str) else _json_problem(
        sender_field, sender_given
    )
    if sender_problem:  # e.g. an object sender nested too deeply to store
        problems.append(sender_problem)
    elif sender_given is not None and sender is None:
        problems.append(f"{sender_field}: must be a name (a string, or an object with a name)")
    elif sender is not None:
        problem = _identifier_problem(sender_field, sender, required_for=None)
        if problem:
            problems.append(problem)

    if type_ == "agent_text":
        if sender_given is None:
            problems.append("agent: required for agent_text")
        text = event.get("text")
        if text is None:
            problems.append("text: required for agent_text")
        elif not isinstance(text, str):
            problems.append("text: must be a string")
        elif len(text) > TEXT_MAX_CHARS:
            problems.append(f"text: at most {TEXT_MAX_CHARS} characters")
    elif type_ == "tool_response":
        for problem in (
            _identifier_problem("tool", event.get("tool"), required_for="tool_response"),
            _identifier_problem("status", event.get("status"), required_for=None),
            _json_problem("data", event.get("data")),
        ):
            if problem:
                problems.append(problem)
    elif type_ == "context_set":
        problem = _name_problem(event, required_for="context_set")
        if problem:
            problems.append(problem)
        problem = _identifier_problem("tool", event.get("tool"), required_for=None)
        if problem:
            problems.append(problem)
        if "value" not in event:
            problems.append("value: required for context_set")
        else:
            problem = _json_problem("value", event["value"])
            if problem:
                problems.append(problem)
    elif type_ == "run_status":
        status = event.get("status")
        if status is None:
            problems.append("status: required for run_status")
        elif status not in RUN_STATUSES:
            problems.append(f"status: must be one of {', '.join(RUN_STATUSES)}")
    elif type_ == "handoff":
        if sender_given is None:
            problems.append("agent: required for handoff (the agent handing over)")
        problem = _identifier_problem("target", event.get("target"), required_for="handoff")
        if problem:
            problems.append(problem)
        rule = event.get("rule")
        if "rule" in event and (not isinstance(rule, int) or isinstance(rule, bool) or rule < 0):
            problems.append("rule: must be the index of a hand-off rule (an integer from 0)")
    elif type_ == "warning":
        problems.extend(_warning_problems(event))
    # Every other field is stored and broadcast as given (``tool`` on an agent_text, say): it
    # must be plain JSON within the depth limit too, or storing it fails.
    # Strings are JSON: only the other values are walked (most events carry strings only).
    others = [
        key for key in EVENT_FIELDS
        if key in event and key != sender_field and not isinstance(event[key], str)
    ]
    if others:
        named = {problem.split(":", 1)[0] for problem in problems}
        for key in others:
            if key not in named:
                problem = _json_problem(key, event[key])
                if problem:
                    problems.append(problem)
    return problems
