"""ContextSync: what a chat's own context changed, as run events (context_set or warning)."""

from __future__ import annotations

from typing import Any

import pytest
from contextadmin_sdk.engine import RunState, load_config, validate_event
from contextadmin_sdk.engine.format import ContextVariablesFile
from contextadmin_sdk.integrations.context_sync import ContextSync, deleted_text

RAW = {
    "context_variables": {
        "declarative_variables": [{"name": "max_items", "type": "integer", "value": 25}],
        "database_variables": [
            {
                "name": "plan_owner",
                "source": {
                    "type": "database",
                    "database_name": "crm",
                    "collection": "Plans",
                    "search_by": "enterprise_id",
                    "field": "owner",
                },
            }
        ],
        "environment_variables": [
            {
                "name": "beta_features",
                "type": "boolean",
                "source": {"type": "environment", "env_var": "BETA_FEATURES"},
            }
        ],
        "derived_variables": [
            {
                "name": "plan_saved",
                "type": "boolean",
                "default": False,
                "triggers": [{"type": "agent_text", "agent": "Planner", "match": {"equals": "X"}}],
            }
        ],
    }
}
CONFIG: ContextVariablesFile = load_config(RAW).config
BASE = {
    "enterprise_id": "acme",
    "workflow_name": "Plans",
    "context_aware": False,
    "monetization_enabled": False,
    "max_items": 25,
    "plan_owner": "db",
    "beta_features": False,
}


def state(environment: str = "development") -> RunState:
    return RunState(CONFIG, BASE, environment=environment)


def chat(run: RunState, **changed: Any) -> dict[str, Any]:
    """The chat's own context: the run's, plus what its tools changed."""
    return {**run.context, **changed}


@pytest.mark.parametrize(
    ("changed", "environment", "expected"),
    [
        pytest.param({}, "development", [], id="nothing-changed"),
        pytest.param(
            {"plan_saved": True}, "development",
            [{"type": "context_set", "name": "plan_saved", "value": True, "tool": "save_plan"}],
            id="derived-flag-set-explicitly",
        ),
        pytest.param(
            {"plan_owner": "tool"}, "development",
            [{"type": "context_set", "name": "plan_owner", "value": "tool", "tool": "save_plan"}],
            id="database-variable",
        ),
        pytest.param(
            {"beta_features": True}, "development",
            [{"type": "context_set", "name": "beta_features", "value": True, "tool": "save_plan"}],
            id="environment-variable-in-development",
        ),
        pytest.param(
            {"beta_features": True}, "production",
            [{"type": "warning", "name": "beta_features", "value": True, "tool": "save_plan",
              "rule": "production",
              "text": "name: environment variable beta_features is suppressed in production"}],
            id="environment-variable-in-production",
        ),
        pytest.param(
            {"max_items": 40}, "development",
            [{"type": "warning", "name": "max_items", "value": 40, "tool": "save_plan",
              "rule": "constant",
              "text": "name: declarative variable max_items is a constant: it never changes "
                      "during a run"}],
            id="declarative-constant",
        ),
        pytest.param(
            {"enterprise_id": "globex"}, "development",
            [{"type": "warning", "name": "enterprise_id", "value": "globex", "tool": "save_plan",
              "rule": "base",
              "text": "name: enterprise_id is the run's base: it never changes during a run"}],
            id="base",
        ),
        pytest.param(
            {"context_aware": True}, "development",
            [{"type": "warning", "name": "context_aware", "value": True, "tool": "save_plan",
              "rule": "base",
              "text": "name: context_aware is a base flag read from CONTEXT_AWARE at start: it "
                      "never changes during a run"}],
            id="base-flag",
        ),
        pytest.param(
            {"plan_saved": "yes"}, "development",
            [{"type": "warning", "name": "plan_saved", "value": "yes", "tool": "save_plan",
              "rule": "type",
              "text": "value: plan_saved takes a boolean (the declared type), got a string"}],
            id="derived-flag-takes-booleans-only",
        ),
        pytest.param(
            {"plan_owner": "postgres://u:pw@db/app"}, "development",
            [{"type": "warning", "name": "plan_owner", "value": "[redacted]", "tool": "save_plan",
              "rule": "credential",
              "text": "value: looks like a credential (a URL with userinfo, e.g. a password); "
                      "context variables never hold secrets"}],
            id="credential-never-reported",
        ),
        pytest.param({"scratch": 1}, "development", [], id="undeclared-chat-keys-are-the-chats"),
    ],
)
def test_changes(changed: dict[str, Any], environment: str, expected: list[Any]) -> None:
    run = state(environment)
    sync = ContextSync(CONFIG, production=environment == "production")
    events = sync.changes(chat(run, **changed), run, tool="save_plan")
    assert events == expected
    for event in events:
        assert validate_event(event) == []
        if event["type"] == "context_set":
            run.apply(event)  # the run takes what ContextSync says it may
        else:
            name = event["name"]
            refused = {"type": "context_set", "name": name, "value": changed[name]}
            assert run.problems(refused) == [event["text"]]  # the engine's own rule


def test_the_explicit_set_is_a_flip_naming_the_tool() -> None:
    run = state()
    sync = ContextSync(CONFIG, production=False)
    [event] = sync.changes(chat(run, plan_saved=True), run, agent="Planner", tool="save_plan")
    applied = run.apply(event)
    assert [flip.as_dict() for flip in applied.flips] == [{
        "name": "plan_saved", "value": True, "trigger_index": None,
        "cause": {"type": "context_set", "tool": "save_plan", "agent": "Planner"},
    }]
    assert sync.changes(chat(run, plan_saved=True), run) == []  # now equal: nothing to say


def test_a_refused_value_is_warned_about_once_per_name_and_value() -> None:
    run = state()
    sync = ContextSync(CONFIG, production=False)
    first = sync.changes(chat(run, max_items=40), run, agent="Planner")
    assert [(e["type"], e["value"], e["agent"]) for e in first] == [("warning", 40, "Planner")]
    assert sync.changes(chat(run, max_items=40), run, agent="Planner") == []
    assert [e["value"] for e in sync.changes(chat(run, max_items=41), run)] == [41]
    assert sync.changes(chat(run, max_items=25), run) == []  # back to the constant


def test_types_are_compared_strictly() -> None:
    run = state()
    sync = ContextSync(CONFIG, production=False)
    [event] = sync.changes(chat(run, beta_features=0), run)
    assert (event["type"], event["rule"]) == ("warning", "type")  # 0 is not False


def test_order_is_deterministic_base_first_then_declared_order() -> None:
    run = state()
    sync = ContextSync(CONFIG, production=False)
    data = chat(run, plan_saved=True, max_items=1, plan_owner="x", enterprise_id="e",
                beta_features=True)
    names = [event["name"] for event in sync.changes(dict(reversed(list(data.items()))), run)]
    assert names == ["enterprise_id", "max_items", "plan_owner", "beta_features", "plan_saved"]


def test_a_value_that_is_not_json_is_warned_about_by_its_repr() -> None:
    class Plan:
        def __repr__(self) -> str:
            return "Plan(id=7)"

    run = state()
    sync = ContextSync(CONFIG, production=False)
    [event] = sync.changes(chat(run, plan_owner=Plan()), run, tool="save_plan")
    assert (event["type"], event["value"], event["rule"]) == ("warning", "Plan(id=7)", "type")
    assert validate_event(event) == []


def test_out_of_contract_arguments_raise_type_error_naming_the_parameter() -> None:
    with pytest.raises(TypeError, match=r"^config: "):
        ContextSync(RAW, production=False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^data: "):
        ContextSync(CONFIG, production=False).changes(None, state())  # type: ignore[arg-type]


def test_restore_gives_the_runs_values_back_for_refused_changes_only() -> None:
    run = state("production")  # beta_features is suppressed: the run has none
    sync = ContextSync(CONFIG, production=True)
    data = chat(run, plan_saved=True, max_items=40, beta_features=True, scratch={"n": 1})
    for event in sync.changes(data, run, tool="save_plan"):
        if event["type"] == "context_set":
            run.apply(event)  # plan_saved: taken, nothing to put back
    assert sync.restore(data, run) == ({"max_items": 25}, ["beta_features"])
    with pytest.raises(TypeError, match=r"^data: "):
        sync.restore(None, run)  # type: ignore[arg-type]


def test_a_deleted_declared_variable_is_warned_about_once_and_given_back() -> None:
    run = state()
    sync = ContextSync(CONFIG, production=False)
    data = chat(run, scratch=1)
    for name in ("max_items", "plan_saved", "workflow_name"):
        del data[name]
    events = sync.changes(data, run, tool="drop")
    assert [(e["type"], e["name"], e["value"], e["rule"]) for e in events] == [
        ("warning", "workflow_name", None, "deleted"),
        ("warning", "max_items", None, "deleted"),
        ("warning", "plan_saved", None, "deleted"),
    ]
    assert events[1]["text"] == deleted_text("max_items")
    assert all(validate_event(event) == [] for event in events)
    assert sync.changes(data, run, tool="drop") == []  # once per name
    assert sync.restore(data, run) == (
        {"workflow_name": "Plans", "max_items": 25, "plan_saved": False},
        [],
    )
    del data["scratch"]  # undeclared: the chat's own
    assert sync.changes(data, run) == [] and sync.restore(data, run)[1] == []
