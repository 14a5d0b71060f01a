"""Derived flags set explicitly (seed 000: "a tool that writes a derived variable explicitly")
and ``warning`` events (nothing the chat changes is dropped silently)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from contextadmin_sdk.engine import (
    WARNING_RULES,
    EventError,
    RunState,
    context_set_refusal,
    load_config,
    replay,
    validate_event,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from .support import config_with, db_var, derived_var, env_var, says

CONFIG = config_with(
    database_name="crm",
    declarative_variables=[{"name": "max_items", "type": "integer", "value": 25}],
    database_variables=[db_var("plan_owner", "Plans", "owner")],
    environment_variables=[env_var("beta_features", "BETA_FEATURES")],
    derived_variables=[
        derived_var("plan_saved", says("Planner", "SAVED")),
        derived_var("review_done", {"type": "tool_response", "tool": "review"}),
    ],
)
BASE = {"enterprise_id": "acme", "workflow_name": "Plans", "max_items": 25}
PARSED = load_config(CONFIG).config


def fresh(environment: str = "development") -> RunState:
    return RunState(CONFIG, BASE, environment=environment)


def explicit(name: str, value: Any, **who: Any) -> dict[str, Any]:
    return {"type": "context_set", "name": name, "value": value, **who}


# -- the rule, with the rule name a warning records ----------------------------------------------
@pytest.mark.parametrize(
    ("name", "value", "environment", "rule"),
    [
        pytest.param("plan_saved", True, "development", None, id="derived-true"),
        pytest.param("plan_saved", False, "production", None, id="derived-false-in-production"),
        pytest.param("plan_saved", "true", "development", "type", id="derived-string"),
        pytest.param("plan_saved", 1, "development", "type", id="derived-integer"),
        pytest.param("plan_saved", None, "development", "type", id="derived-null"),
        pytest.param("max_items", 40, "development", "constant", id="declarative"),
        pytest.param("enterprise_id", "x", "development", "base", id="base-name"),
        pytest.param("context_aware", True, "development", "base", id="base-flag"),
        pytest.param("context_aware", True, "production", "production", id="base-flag-prod"),
        pytest.param("beta_features", True, "production", "production", id="env-in-production"),
        pytest.param("beta_features", True, "development", None, id="env-in-development"),
        pytest.param("ghost", 1, "development", "undeclared", id="undeclared"),
        pytest.param("plan_owner", 3, "development", "type", id="database-wrong-type"),
        pytest.param("plan_owner", "https://u:p@h/", "development", "credential", id="credential"),
    ],
)
def test_context_set_refusal_names_the_rule(
    name: str, value: Any, environment: str, rule: str | None
) -> None:
    refusal = context_set_refusal(PARSED, name, value, environment=environment)
    assert (refusal.rule if refusal else None) == rule
    if refusal is not None:
        assert refusal.rule in WARNING_RULES
        assert refusal.problem.split(":", 1)[0] in {"name", "value"}  # names the field


# -- explicit sets are flips -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("who", "cause"),
    [
        pytest.param(
            {"tool": "save_plan"}, {"type": "context_set", "tool": "save_plan"}, id="tool"
        ),
        pytest.param({"agent": "Planner"}, {"type": "context_set", "agent": "Planner"}, id="agent"),
        pytest.param(
            {"tool": "save_plan", "agent": "Planner"},
            {"type": "context_set", "tool": "save_plan", "agent": "Planner"},
            id="tool-and-agent",
        ),
        pytest.param({}, {"type": "context_set"}, id="anonymous"),
    ],
)
def test_an_explicit_set_is_a_flip_whose_cause_names_who(
    who: dict[str, Any], cause: dict[str, Any]
) -> None:
    state = fresh()
    applied = state.apply(explicit("plan_saved", True, **who))
    assert [flip.as_dict() for flip in applied.flips] == [
        {"name": "plan_saved", "value": True, "trigger_index": None, "cause": cause}
    ]
    assert applied.changes == {"plan_saved": {"old": False, "new": True}}
    assert state.flips == [{**applied.flips[0].as_dict(), "seq": 1}]
    assert state.get("context.plan_saved") is True


def test_the_same_value_again_is_no_second_flip() -> None:
    state = fresh()
    state.apply(explicit("plan_saved", True, tool="save_plan"))
    again = state.apply(explicit("plan_saved", True, tool="save_plan"))
    assert (again.flips, again.changes) == ([], {})
    state.apply({"type": "agent_text", "agent": "Planner", "text": "SAVED"})  # already true
    assert [flip["seq"] for flip in state.flips] == [1]


def test_an_explicit_set_may_clear_a_flag_a_trigger_raised() -> None:
    state = fresh()
    state.apply({"type": "agent_text", "agent": "Planner", "text": "SAVED"})
    applied = state.apply(explicit("plan_saved", False, agent="Reviewer"))
    assert [(f.name, f.value, f.trigger_index) for f in applied.flips] == [
        ("plan_saved", False, None)
    ]
    assert state.get("context.plan_saved") is False


def test_a_derived_flag_takes_a_boolean_only() -> None:
    state = fresh()
    before = state.to_dict()
    with pytest.raises(EventError) as info:
        state.apply(explicit("plan_saved", "yes", tool="save_plan"))
    assert info.value.problems == [
        "value: plan_saved takes a boolean (the declared type), got a string"
    ]
    assert state.to_dict() == before


# -- warning events ------------------------------------------------------------------------------
WARNING = {"type": "warning", "name": "max_items", "value": 40, "tool": "tune", "rule": "constant"}


@pytest.mark.parametrize(
    ("event", "problems"),
    [
        pytest.param(WARNING, [], id="valid"),
        pytest.param({**WARNING, "agent": "Planner", "text": "refused"}, [], id="with-agent-text"),
        pytest.param(
            {k: v for k, v in WARNING.items() if k != "name"}, ["name: required for warning"],
            id="no-name",
        ),
        pytest.param(
            {k: v for k, v in WARNING.items() if k != "value"},
            ["value: required for warning (the value that was refused)"],
            id="no-value",
        ),
        pytest.param(
            {k: v for k, v in WARNING.items() if k != "rule"},
            [f"rule: required for warning (one of {', '.join(WARNING_RULES)})"],
            id="no-rule",
        ),
        pytest.param(
            {**WARNING, "rule": "because"}, [f"rule: must be one of {', '.join(WARNING_RULES)}"],
            id="unknown-rule",
        ),
        pytest.param({**WARNING, "rule": 0}, [f"rule: must be one of {', '.join(WARNING_RULES)}"],
                     id="handoff-style-rule"),
        pytest.param(
            {**WARNING, "text": 5}, ["text: must be a string of at most 100000 characters"],
            id="text-not-a-string",
        ),
        pytest.param(
            {**WARNING, "tool": ""}, ["tool: must be a non-empty string"], id="empty-tool"
        ),
        pytest.param({**WARNING, "name": 7},
                     ["name: must be a variable name (at most 64 characters)"], id="name-not-str"),
    ],
)
def test_validate_warning(event: dict[str, Any], problems: list[str]) -> None:
    assert validate_event(event) == problems


def test_a_warning_changes_no_variable_and_is_counted() -> None:
    state = fresh()
    before = state.to_dict()
    applied = state.apply(WARNING)
    assert (applied.flips, applied.changes) == ([], {})
    assert state.context == before["context"]
    assert state.get("execution.warnings") == 1
    state.apply({**WARNING, "value": 41})
    assert state.get("execution.warnings") == 2
    assert RunState.from_dict(CONFIG, state.to_dict()).get("execution.warnings") == 2


def test_a_warning_never_holds_a_secret() -> None:
    state = fresh()
    before = state.to_dict()
    event = {**WARNING, "name": "plan_owner", "value": {"url": "postgres://u:pw@db/app"},
             "rule": "credential"}
    with pytest.raises(EventError) as info:
        state.apply(event)
    assert info.value.problems == [
        "value: looks like a credential (a URL with userinfo, e.g. a password); a warning never "
        "holds secrets (send [redacted] instead)"
    ]
    assert state.to_dict() == before
    state.apply({**event, "value": "[redacted]"})
    assert state.get("execution.warnings") == 1


# -- replay ----------------------------------------------------------------------------------------
VALUES = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from(["", "x", "beta"]), st.none())
NAMES = st.sampled_from(
    ["plan_saved", "review_done", "max_items", "plan_owner", "beta_features", "enterprise_id",
     "context_aware"]
)
WHO = st.fixed_dictionaries({}, optional={"tool": st.sampled_from(["save_plan", "review"]),
                                          "agent": st.sampled_from(["Planner", "Reviewer"])})
EVENTS = st.one_of(
    st.builds(lambda n, v, w: explicit(n, v, **w), NAMES, VALUES, WHO),
    st.builds(lambda n, v, r: {"type": "warning", "name": n, "value": v, "rule": r},
              NAMES, VALUES, st.sampled_from(WARNING_RULES)),
    st.builds(lambda t: {"type": "agent_text", "agent": "Planner", "text": t},
              st.sampled_from(["SAVED", "hm"])),
    st.just({"type": "tool_response", "tool": "review", "status": "success"}),
)


@settings(max_examples=150, deadline=None)
@given(events=st.lists(EVENTS, max_size=25), environment=st.sampled_from(["development",
                                                                        "production"]))
def test_replay_rebuilds_explicit_sets_and_warnings(
    events: list[dict[str, Any]], environment: str
) -> None:
    live = fresh(environment)
    taken = []
    for event in events:
        if live.problems(event):
            continue  # refused: the adapter reports it as a warning instead
        live.apply(event)
        taken.append(event)
    assert replay(CONFIG, BASE, taken, environment=environment).to_dict() == live.to_dict()
    flags = [flip for flip in live.flips if flip["trigger_index"] is None]
    for flip in flags:  # every explicit flip changed the flag: no repeat of the same value
        assert flip["cause"]["type"] == "context_set"
    values = [(flip["name"], flip["value"]) for flip in live.flips]
    for name in ("plan_saved", "review_done"):
        mine = [value for flag, value in values if flag == name]
        assert all(a != b for a, b in pairwise(mine))  # each one a change
