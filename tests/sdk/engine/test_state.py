"""RunState (seed 004 namespaces), event validation, snapshots and replay (docs/api.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contextadmin_sdk.engine import (
    RUN_ENDED_STATUSES,
    ContextError,
    EventError,
    RunState,
    SeqError,
    build_context,
    json_safe,
    replay,
    validate_event,
)
from contextadmin_sdk.engine.log import preview, safe_preview
from hypothesis import given, settings
from hypothesis import strategies as st

from .support import (
    config_with,
    db_var,
    demo_config,
    demo_events,
    derived_var,
    env_var,
    says,
    text,
    tool,
)

CONFIG = config_with(
    database_name="crm",
    declarative_variables=[{"name": "product_tier", "value": "beta"}],
    database_variables=[db_var("account_plan", "Accounts", "plan")],
    environment_variables=[env_var("beta_features", "BETA_FEATURES")],
    derived_variables=[
        derived_var("interview_complete", says("InterviewAgent", "NEXT")),
        derived_var(
            "plan_saved", {"type": "tool_response", "tool": "save_plan", "status": "success"}
        ),
        derived_var("chatty", {"type": "agent_turn_count", "agent": "InterviewAgent", "count": 3}),
    ],
)
BASE = {"enterprise_id": "acme", "workflow_name": "Generator", "product_tier": "beta"}
SEQ_RULE = "seq: must be a whole number from 1 to 9,223,372,036,854,775,807"  # 2**63 - 1


def fresh() -> RunState:
    return RunState(CONFIG, BASE)


# -- construction and dot paths ---------------------------------------------------------------
def test_initial_state() -> None:
    assert fresh().to_dict() == {
        "context": {**BASE, "interview_complete": False, "plan_saved": False, "chatty": False},
        "nodes": {},
        "execution": {
            "status": "running",
            "current_agent": None,
            "visited_agents": [],
            "turn_counts": {},
            "path": [],
            "exchanges": [],
            "last_seq": 0,
            "environment": "development",
        },
        "agent": {},
        "world": {},
        "flips": [],
        "writes": {},
    }


def test_base_context_may_be_a_loader_context_and_keeps_its_derived_values() -> None:
    ctx = build_context(demo_config(), workflow_name="Generator", enterprise_id="acme", environ={})
    ctx.values["interview_complete"] = True
    state = RunState(demo_config(), ctx)
    assert state.get("context.interview_complete") is True
    assert state.get("context.product_tier") == "beta"
    state.set("context.product_tier", "changed")
    assert ctx.values["product_tier"] == "beta"  # the state owns a copy


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("context.enterprise_id", "acme", id="context"),
        pytest.param("execution.status", "running", id="execution"),
        pytest.param("nodes.save_plan.saved", 6, id="node-field"),
        pytest.param("nodes.save_plan.items.1.sku", "Y", id="list-index"),
        pytest.param(
            "nodes.save_plan", {"saved": 6, "items": [{"sku": "X"}, {"sku": "Y"}]}, id="whole-node"
        ),
        pytest.param("nodes.save_plan.items.5", "DEFAULT", id="out-of-range"),
        pytest.param("nodes.nobody.text", "DEFAULT", id="missing"),
        pytest.param("temp.plan", "DEFAULT", id="unknown-namespace"),
        pytest.param("agent.plan", "DEFAULT", id="agent-namespace-empty"),
        pytest.param("world", {}, id="whole-world-namespace"),
        pytest.param("context.enterprise_id.x", "DEFAULT", id="into-a-string"),
    ],
)
def test_get(path: str, expected: Any) -> None:
    state = fresh()
    state.apply(tool("save_plan", "success", {"saved": 6, "items": [{"sku": "X"}, {"sku": "Y"}]}))
    assert state.get(path, "DEFAULT") == expected


def test_get_whole_namespace() -> None:
    assert fresh().get("execution")["status"] == "running"


@pytest.mark.parametrize(
    ("path", "value", "check", "expected"),
    [
        pytest.param("context.note", "hi", "context.note", "hi", id="new-context-key"),
        pytest.param("nodes.a.b.c", 1, "nodes.a", {"b": {"c": 1}}, id="creates-intermediates"),
        pytest.param(
            "execution.status", "completed", "execution.status", "completed", id="execution"
        ),
        pytest.param(
            "execution.visited_agents.0", "Z", "execution.visited_agents", ["Z"], id="list-index"
        ),
        pytest.param(
            "agent.plan.initial_objective", "find X", "agent", {"plan": {"initial_objective":
                                                                         "find X"}},
            id="seed-004-agent",
        ),
        pytest.param("world.time.current", 5, "world.time", {"current": 5}, id="seed-004-world"),
    ],
)
def test_set(path: str, value: Any, check: str, expected: Any) -> None:
    state = fresh()
    state.set("execution.visited_agents", ["A"])
    state.set(path, value)
    assert state.get(check) == expected


@pytest.mark.parametrize(
    "path",
    ["context", "agent", "temp.x", "context..x", "execution.visited_agents.3",
     "context.enterprise_id.x"],
)
def test_set_refuses_bad_paths(path: str) -> None:
    with pytest.raises(KeyError):
        fresh().set(path, 1)


# -- applying events --------------------------------------------------------------------------
def test_agent_text_updates_execution_nodes_and_derived() -> None:
    state = fresh()
    state.apply(text("InterviewAgent", "Hello"))
    state.apply(text("user", "Hi"))
    applied = state.apply(text("InterviewAgent", " next "))
    assert applied.seq == 3
    assert [f.name for f in applied.flips] == ["interview_complete"]
    assert applied.changes == {"interview_complete": {"old": False, "new": True}}
    assert state.get("nodes.InterviewAgent") == {"text": " next "}
    assert state.execution == {
        "status": "running",
        "current_agent": "InterviewAgent",
        "visited_agents": ["InterviewAgent", "user"],
        "turn_counts": {"InterviewAgent": 2, "user": 1},
        "path": [],
        "exchanges": [  # the user answered the agent, and the agent the user
            {"source": "InterviewAgent", "target": "user", "turns": 1},
            {"source": "user", "target": "InterviewAgent", "turns": 1},
        ],
        "last_seq": 3,
        "environment": "development",
    }
    applied = state.apply(text("InterviewAgent", "third"))
    assert [f.name for f in applied.flips] == ["chatty"]
    assert [(f["name"], f["seq"]) for f in state.flips] == [
        ("interview_complete", 3),
        ("chatty", 4),
    ]


@pytest.mark.parametrize(
    ("event", "node", "flipped"),
    [
        pytest.param(tool("save_plan", "success", {"saved": 6}), {"saved": 6}, True, id="data"),
        pytest.param(
            tool("save_plan", "success"), {"status": "success"}, True, id="no-data-keeps-status"
        ),
        pytest.param(
            tool("save_plan", "error", {"saved": 0}), {"saved": 0}, False, id="wrong-status"
        ),
        pytest.param(tool("save_plan", data=[1, 2]), [1, 2], False, id="list-data-no-status"),
        pytest.param(tool("save_plan", "success", {}), {}, True, id="empty-data-is-data"),
    ],
)
def test_tool_response(event: dict[str, Any], node: Any, flipped: bool) -> None:
    state = fresh()
    applied = state.apply(event)
    assert state.get("nodes.save_plan") == node
    assert state.get("context.plan_saved") is flipped
    assert bool(applied.flips) is flipped
    assert state.execution["turn_counts"] == {}  # tools are not turns


def test_tool_data_is_copied() -> None:
    data = {"saved": 6}
    state = fresh()
    state.apply(tool("save_plan", "success", data))
    data["saved"] = 99
    assert state.get("nodes.save_plan.saved") == 6


@pytest.mark.parametrize(
    ("name", "value", "changes"),
    [
        pytest.param(
            "account_plan",
            "gold",
            {"account_plan": {"old": None, "new": "gold"}},
            id="database",
        ),
        pytest.param(
            "beta_features",
            True,
            {"beta_features": {"old": None, "new": True}},
            id="environment-in-development",
        ),
    ],
)
def test_context_set(name: str, value: Any, changes: dict[str, Any]) -> None:
    state = fresh()
    applied = state.apply({"type": "context_set", "name": name, "value": value})
    assert state.get(f"context.{name}") == value
    assert applied.changes == changes
    assert applied.flips == [] and state.flips == []  # an explicit set is a change, not a flip
    again = state.apply({"type": "context_set", "name": name, "value": value})
    assert again.changes == {}  # the same value again changes nothing


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        pytest.param(
            {"type": "context_set", "name": "ghost", "value": 1},
            "name: unknown variable ghost (declare it in the workflow first)",
            id="undeclared",
        ),
        pytest.param(
            {"type": "context_set", "name": "enterprise_id", "value": "x"},
            "name: enterprise_id is the run's base: it never changes during a run",
            id="base-name",
        ),
        pytest.param(
            {"type": "context_set", "name": "interview_complete", "value": "yes"},
            "value: interview_complete takes a boolean (the declared type), got a string",
            id="derived-not-a-boolean",
        ),
        pytest.param(
            {"type": "context_set", "name": "product_tier", "value": "gold"},
            "name: declarative variable product_tier is a constant: it never changes during a run",
            id="declarative",
        ),
        pytest.param(
            {"type": "agent_text", "agent": "A"},
            "text: required for agent_text",
            id="invalid-event",
        ),
    ],
)
def test_apply_refuses_events_the_run_cannot_take(event: dict[str, Any], problem: str) -> None:
    state = fresh()
    before = state.to_dict()
    assert state.problems(event) == [problem]
    with pytest.raises(EventError) as info:
        state.apply(event)
    assert info.value.problems == [problem]
    assert state.to_dict() == before


def test_run_status() -> None:
    state = fresh()
    state.apply({"type": "run_status", "status": "completed"})
    assert state.get("execution.status") == "completed"


@pytest.mark.parametrize(
    ("seqs", "error"),
    [
        pytest.param([1, 2, 3], None, id="consecutive"),
        pytest.param([None, 2, None], None, id="mixed-with-assigned"),
        pytest.param([1, 3], (2, 3), id="gap"),
        pytest.param([1, 1], (2, 1), id="repeat"),
        pytest.param([2], (1, 2), id="does-not-start-at-1"),
    ],
)
def test_seq(seqs: list[int | None], error: tuple[int, int] | None) -> None:
    state = fresh()
    applied = []
    for index, seq in enumerate(seqs):
        event = text("A", "x") if seq is None else text("A", "x", seq=seq)
        if error is not None and index == len(seqs) - 1:
            with pytest.raises(SeqError) as info:
                state.apply(event)
            assert (info.value.expected, info.value.got) == error
            assert info.value.problems == [f"seq: expected {error[0]}, got {error[1]}"]
            return
        applied.append(state.apply(event).seq)
    assert applied == list(range(1, len(seqs) + 1))


# -- validate_event ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("event", "problems"),
    [
        pytest.param(text("A", "hi"), [], id="agent-text"),
        pytest.param(text({"name": "A"}, "hi", seq=4), [], id="agent-as-mapping"),
        pytest.param({"type": "agent_text", "sender": "A", "text": ""}, [], id="sender-alias"),
        pytest.param(
            {"type": "agent_text", "agent": "A", "sender": {"name": [[[]]]}, "text": ""},
            ["sender: give agent or sender (its alias), not both"],
            id="agent-and-sender",
        ),
        pytest.param(tool("t", "success", {"a": [1, 2.5, None]}), [], id="tool"),
        pytest.param(
            {"type": "context_set", "name": "x", "value": None}, [], id="context-set-null"
        ),
        pytest.param({"type": "run_status", "status": "failed"}, [], id="run-status"),
        pytest.param([], ["event: must be an object"], id="not-an-object"),
        pytest.param(
            {},
            [
                "type: required (one of agent_text, tool_response, context_set, run_status, "
                "handoff, warning)"
            ],
            id="no-type",
        ),
        pytest.param(
            {"type": "chat"},
            [
                "type: must be one of agent_text, tool_response, context_set, run_status, "
                "handoff, warning"
            ],
            id="bad-type",
        ),
        pytest.param(
            {"type": ["agent_text"]},
            [
                "type: must be one of agent_text, tool_response, context_set, run_status, "
                "handoff, warning"
            ],
            id="unhashable-type",
        ),
        pytest.param(
            {"type": "agent_text", "text": "hi"}, ["agent: required for agent_text"], id="no-agent"
        ),
        pytest.param(
            {"type": "agent_text", "agent": "A"}, ["text: required for agent_text"], id="no-text"
        ),
        pytest.param(
            {"type": "agent_text", "agent": "A", "text": 5},
            ["text: must be a string"],
            id="text-type",
        ),
        pytest.param(
            text("A", "x" * 100_001), ["text: at most 100000 characters"], id="text-too-long"
        ),
        pytest.param(
            text(5, "hi"),
            ["agent: must be a name (a string, or an object with a name)"],
            id="agent-not-a-name",
        ),
        pytest.param(text("", "hi"), ["agent: must be a non-empty string"], id="agent-empty"),
        pytest.param(text("A" * 201, "hi"), ["agent: at most 200 characters"], id="agent-too-long"),
        pytest.param(text("A", "hi", seq=0), [SEQ_RULE], id="seq-zero"),
        pytest.param(text("A", "hi", seq="1"), [SEQ_RULE], id="seq-string"),
        pytest.param(text("A", "hi", seq=True), [SEQ_RULE], id="seq-bool"),
        pytest.param(text("A", "hi", seq=2**63), [SEQ_RULE], id="seq-past-64-bit"),
        pytest.param(text("A", "hi", seq=1e30), [SEQ_RULE], id="seq-float"),
        pytest.param(
            text("A", "hi", when="now"),
            [
                "when: unknown field (allowed: "
                "type, seq, agent, sender, text, tool, status, data, name, value, target, rule)"
            ],
            id="unknown-field",
        ),
        pytest.param({"type": "tool_response"}, ["tool: required for tool_response"], id="no-tool"),
        pytest.param(
            {"type": "tool_response", "tool": "t", "status": 200},
            ["status: must be a non-empty string"],
            id="status-type",
        ),
        pytest.param(
            {"type": "tool_response", "tool": "t", "data": {"x": float("nan")}},
            ["data: must be a finite number"],
            id="data-nan",
        ),
        pytest.param(
            {"type": "tool_response", "tool": "t", "data": {1: "x"}},
            ["data: object keys must be strings"],
            id="data-int-key",
        ),
        pytest.param(
            {"type": "tool_response", "tool": "t", "data": {"x": {1, 2}}},
            ["data: must be JSON (got set)"],
            id="data-not-json",
        ),
        pytest.param(
            {"type": "context_set", "value": 1}, ["name: required for context_set"], id="no-name"
        ),
        pytest.param(
            {"type": "context_set", "name": "x"}, ["value: required for context_set"], id="no-value"
        ),
        pytest.param({"type": "run_status"}, ["status: required for run_status"], id="no-status"),
        pytest.param(
            {"type": "run_status", "status": "exploded"},
            ["status: must be one of running, paused, completed, failed, cancelled"],
            id="bad-status",
        ),
    ],
)
def test_validate_event(event: Any, problems: list[str]) -> None:
    assert validate_event(event) == problems


def test_validate_event_bounds_nesting() -> None:
    data: Any = "leaf"
    for _ in range(100):
        data = [data]
    assert validate_event(tool("t", data=data)) == ["data: nested more than 64 levels"]


@pytest.mark.parametrize(
    "field, base",
    [
        ("tool", {"type": "agent_text", "agent": "A", "text": "hi"}),  # a field its type ignores
        ("data", {"type": "agent_text", "agent": "A", "text": "hi"}),
        ("status", {"type": "agent_text", "agent": "A", "text": "hi"}),
        ("value", {"type": "run_status", "status": "running"}),
    ],
)
def test_validate_event_bounds_nesting_of_every_field(field: str, base: dict[str, Any]) -> None:
    """Found by the API fuzz test: 250 levels in ``tool`` of an agent_text passed validation
    and failed to serialize for the broadcast (a 500)."""
    nested: Any = "leaf"
    for _ in range(250):
        nested = {"k": [nested]}
    assert validate_event({**base, field: nested}) == [f"{field}: nested more than 64 levels"]
    assert validate_event({**base, field: {"plain": [1, "two", None]}}) == []


# -- snapshots and replay ---------------------------------------------------------------------
def test_demo_log_replays_to_the_live_state() -> None:
    ctx = build_context(demo_config(), workflow_name="Generator", enterprise_id="acme", environ={})
    live = RunState(demo_config(), ctx)
    for event in demo_events():
        live.apply(event)
    assert live.get("context.interview_complete") is True
    assert live.get("nodes.save_context_plan.saved") == 6
    assert [(f["name"], f["seq"]) for f in live.flips] == [("interview_complete", 5)]
    assert replay(demo_config(), ctx.values, demo_events()).to_dict() == live.to_dict()


def test_snapshot_round_trip_then_continue() -> None:
    events = demo_events()
    live = RunState(demo_config(), BASE)
    for event in events[:4]:
        live.apply(event)
    restored = RunState.from_dict(demo_config(), json.loads(json.dumps(live.to_dict())))
    assert restored.to_dict() == live.to_dict()
    for event in events[4:]:
        assert restored.apply(event).as_dict() == live.apply(event).as_dict()
    assert restored.to_dict() == live.to_dict()


def test_to_dict_is_a_copy() -> None:
    state = fresh()
    state.apply(tool("save_plan", "success", {"saved": 1}))
    snapshot = state.to_dict()
    snapshot["nodes"]["save_plan"]["saved"] = 99
    snapshot["execution"]["visited_agents"].append("X")
    assert state.get("nodes.save_plan.saved") == 1
    assert state.execution["visited_agents"] == []


AGENTS = ["InterviewAgent", "user", "HandoffsAgent"]
event_strategy = st.one_of(
    st.builds(
        text, st.sampled_from(AGENTS), st.sampled_from(["NEXT", " next ", "hello", "", "Next!"])
    ),
    st.builds(
        tool,
        st.sampled_from(["save_plan", "other"]),
        st.sampled_from(["success", "error"]),
        st.one_of(
            st.none(),
            st.dictionaries(
                st.sampled_from(["a", "b"]), st.integers(-(2**63), 2**63 - 1), max_size=2
            ),
        ),
    ),
    st.builds(
        lambda value: {"type": "context_set", "name": "beta_features", "value": value},
        st.booleans(),
    ),
    st.builds(
        lambda value: {"type": "context_set", "name": "account_plan", "value": value},
        st.text(max_size=5),
    ),
    st.builds(
        lambda status: {"type": "run_status", "status": status},
        st.sampled_from(["running", "paused", "completed"]),
    ),
)


def _until_ended(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A log a run can have: nothing after the event that ended it (the lifecycle rule)."""
    for index, event in enumerate(events):
        if event["type"] == "run_status" and event["status"] in RUN_ENDED_STATUSES:
            return events[: index + 1]
    return events


run_logs = st.lists(event_strategy, max_size=25).map(_until_ended)


@settings(max_examples=80, deadline=None)
@given(events=run_logs, numbered=st.booleans())
def test_replaying_any_prefix_equals_the_live_state_then(
    events: list[dict[str, Any]], numbered: bool
) -> None:
    if numbered:
        events = [{**event, "seq": index} for index, event in enumerate(events, 1)]
    live = fresh()
    snapshots = [live.to_dict()]
    for event in events:
        live.apply(event)
        snapshots.append(live.to_dict())
    for cut, snapshot in enumerate(snapshots):
        assert replay(CONFIG, BASE, events[:cut]).to_dict() == snapshot
    assert json.loads(json.dumps(snapshots[-1])) == snapshots[-1]
    seqs = [flip["seq"] for flip in snapshots[-1]["flips"]]
    assert seqs == sorted(seqs) and all(1 <= seq <= len(events) for seq in seqs)


@settings(max_examples=50, deadline=None)
@given(events=run_logs, data=st.data())
def test_a_snapshot_continues_exactly_like_the_live_state(
    events: list[dict[str, Any]], data: Any
) -> None:
    cut = data.draw(st.integers(0, len(events)), label="cut")
    live = fresh()
    for event in events[:cut]:
        live.apply(event)
    restored = RunState.from_dict(CONFIG, json.loads(json.dumps(live.to_dict())))
    for event in events[cut:]:
        assert restored.apply(event).as_dict() == live.apply(event).as_dict()
    assert restored.to_dict() == live.to_dict()


# -- issue 14: a run knows its environment (1) ------------------------------------------------
PRODUCTION_BASE = {**BASE, "beta_features": True, "context_aware": True, "account_plan": "pro"}


def test_production_state_drops_environment_flags_from_its_base_context() -> None:
    state = RunState(CONFIG, PRODUCTION_BASE, environment="production")
    assert "beta_features" not in state.context
    assert "context_aware" not in state.context
    assert state.context["account_plan"] == "pro"
    assert state.environment == "production"
    assert state.to_dict()["execution"]["environment"] == "production"
    development = RunState(CONFIG, PRODUCTION_BASE)
    assert development.context["beta_features"] is True
    assert development.environment == "development"


def test_the_environment_survives_a_snapshot_and_replay() -> None:
    live = RunState(CONFIG, PRODUCTION_BASE, environment="production")
    live.apply(text("InterviewAgent", "NEXT"))
    restored = RunState.from_dict(CONFIG, json.loads(json.dumps(live.to_dict())))
    assert restored.environment == "production"
    assert restored.problems({"type": "context_set", "name": "beta_features", "value": True}) == [
        "name: environment variable beta_features is suppressed in production"
    ]
    replayed = replay(
        CONFIG, PRODUCTION_BASE, [text("InterviewAgent", "NEXT")], environment="production"
    )
    assert replayed.to_dict() == live.to_dict()
    with pytest.raises(ValueError, match="the snapshot is of a production run"):
        RunState.from_dict(CONFIG, live.to_dict(), environment="development")
    old_snapshot = live.to_dict()
    del old_snapshot["execution"]["environment"]  # stored before the field existed
    assert RunState.from_dict(CONFIG, old_snapshot).environment == "development"


def test_an_unknown_environment_is_refused() -> None:
    with pytest.raises(ValueError, match="environment: must be one of development, production"):
        RunState(CONFIG, BASE, environment="staging")


# -- issue 14: what context_set may touch, and only with the declared type (1, 2, 3) ----------
TYPED = config_with(
    database_name="crm",
    declarative_variables=[
        {"name": "product_tier", "value": "beta"},
        {"name": "max_items", "type": "integer", "value": 25},
    ],
    database_variables=[
        db_var("account_plan", "Accounts", "plan"),
        {**db_var("seats", "Accounts", "seats"), "type": "integer"},
        {**db_var("ratio", "Accounts", "ratio"), "type": "number"},
    ],
    environment_variables=[
        env_var("context_aware", "CONTEXT_AWARE"),
        env_var("beta_features", "BETA_FEATURES"),
        env_var("region", "REGION", "string"),
    ],
    derived_variables=[derived_var("interview_complete", says("InterviewAgent", "NEXT"))],
)


@pytest.mark.parametrize(
    ("name", "value", "environment", "problem"),
    [
        # the declared type, and nothing else
        pytest.param("account_plan", "gold", "development", None, id="string-ok"),
        pytest.param("seats", 12, "development", None, id="integer-ok"),
        pytest.param("ratio", 0.5, "development", None, id="number-ok"),
        pytest.param("ratio", 3, "development", None, id="number-takes-an-integer"),
        pytest.param("beta_features", False, "development", None, id="boolean-ok"),
        pytest.param("region", "eu", "development", None, id="environment-string-ok"),
        pytest.param(
            "account_plan", 12345, "development",
            "value: account_plan takes a string (the declared type), got an integer",
            id="integer-for-string",
        ),
        pytest.param(
            "seats", "lots", "development",
            "value: seats takes an integer (the declared type), got a string",
            id="string-for-integer",
        ),
        pytest.param(
            "seats", True, "development",
            "value: seats takes an integer (the declared type), got a boolean",
            id="boolean-is-not-an-integer",
        ),
        pytest.param(
            "seats", 2.5, "development",
            "value: seats takes an integer (the declared type), got a number",
            id="number-for-integer",
        ),
        pytest.param(
            "beta_features", "false", "development",
            "value: beta_features takes a boolean (the declared type), got a string",
            id="truthy-string-for-boolean",
        ),
        pytest.param(
            "account_plan", None, "development",
            "value: account_plan takes a string (the declared type), got null",
            id="null",
        ),
        pytest.param(
            "account_plan", {"a": 1}, "development",
            "value: account_plan takes a string (the declared type), got an object",
            id="object",
        ),
        pytest.param(
            "account_plan", "postgres://u:pw@db/app", "development",
            "value: looks like a credential (a URL with userinfo, e.g. a password); "
            "context variables never hold secrets",
            id="credential",
        ),
        # names context_set never touches
        pytest.param(
            "max_items", "lots", "development",
            "name: declarative variable max_items is a constant: it never changes during a run",
            id="declarative-max-items",
        ),
        pytest.param(
            "product_tier", 12345, "development",
            "name: declarative variable product_tier is a constant: it never changes during a run",
            id="declarative-product-tier",
        ),
        pytest.param(
            "context_aware", "false", "development",
            "name: context_aware is a base flag read from CONTEXT_AWARE at start: it never "
            "changes during a run",
            id="base-flag-context-aware",
        ),
        pytest.param(
            "monetization_enabled", True, "development",
            "name: monetization_enabled is a base flag read from MONETIZATION_ENABLED at start: "
            "it never changes during a run",
            id="base-flag-undeclared",
        ),
        pytest.param(
            "workflow_name", "Other", "development",
            "name: workflow_name is the run's base: it never changes during a run",
            id="base-workflow-name",
        ),
        pytest.param("interview_complete", True, "development", None, id="derived-explicit-set"),
        pytest.param(
            "interview_complete", 1, "development",
            "value: interview_complete takes a boolean (the declared type), got an integer",
            id="derived-not-a-boolean",
        ),
        pytest.param(
            "ghost", 1, "development",
            "name: unknown variable ghost (declare it in the workflow first)",
            id="undeclared",
        ),
        # production
        pytest.param(
            "beta_features", True, "production",
            "name: environment variable beta_features is suppressed in production",
            id="production-environment",
        ),
        pytest.param(
            "monetization_enabled", True, "production",
            "name: environment variable monetization_enabled is suppressed in production",
            id="production-base-flag",
        ),
        pytest.param("account_plan", "gold", "production", None, id="production-database-ok"),
    ],
)
def test_context_set_rules(name: str, value: Any, environment: str, problem: str | None) -> None:
    state = RunState(TYPED, BASE, environment=environment)
    before = state.to_dict()
    event = {"type": "context_set", "name": name, "value": value}
    if problem is None:
        state.apply(event)
        assert state.context[name] == value
        return
    assert state.problems(event) == [problem]
    with pytest.raises(EventError) as info:
        state.apply(event)
    assert info.value.problems == [problem]
    assert state.to_dict() == before


def test_a_base_context_too_deep_to_store_is_refused() -> None:
    deep: Any = 1
    for _ in range(1_000):
        deep = [deep]
    with pytest.raises(ContextError) as info:
        RunState(CONFIG, {**BASE, "account_plan": deep})
    assert info.value.problems == ["context.account_plan: nested more than 64 levels"]


@settings(max_examples=40, deadline=None)
@given(events=st.lists(event_strategy, max_size=20))
def test_a_production_run_never_holds_an_environment_flag(events: list[dict[str, Any]]) -> None:
    state = RunState(CONFIG, PRODUCTION_BASE, environment="production")
    for event in events:
        if state.problems(event):
            continue
        state.apply(event)
        assert "beta_features" not in state.context and "context_aware" not in state.context


# -- issue 14: every recursive walk is bounded (7) --------------------------------------------
def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": [value]}
    return value


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        pytest.param(tool("t", data=_deep(5_000)), "data: nested more than 64 levels", id="data"),
        pytest.param(
            {"type": "context_set", "name": "x", "value": _deep(5_000)},
            "value: nested more than 64 levels",
            id="value",
        ),
        pytest.param(
            text({"name": "A", "more": _deep(5_000)}, "hi"),
            "agent: nested more than 64 levels",
            id="sender-object",
        ),
        pytest.param(
            tool("t", data={"n": 2**63}),
            "data: must fit in a signed 64-bit integer (JSON consumers and databases cap it)",
            id="int-beyond-64-bits",
        ),
    ],
)
def test_deep_or_huge_event_values_are_refused_without_recursion(
    event: dict[str, Any], problem: str
) -> None:
    assert problem in validate_event(event)


@pytest.mark.parametrize(
    "value",
    [_deep(5_000), 10**5000, {1: "a", "b": 2}],
    ids=["5000-deep", "5000-digits", "mixed-keys"],
)
def test_log_previews_never_raise(value: Any) -> None:
    assert preview(value).startswith("<")
    assert safe_preview(value).startswith("<")


@pytest.mark.parametrize(
    ("value", "shown"),
    [("a\udcff", '"a\\udcff"'), ({"k": "é\ud800"}, '{"k": "é\\ud800"}'), ("héllo", '"héllo"')],
    ids=["lone-surrogate", "nested-surrogate", "plain-accent"],
)
def test_log_previews_are_always_utf8(value: Any, shown: str) -> None:
    """Undecodable bytes in an env var (a lone surrogate) must not break a UTF-8 log or store."""
    assert preview(value) == shown
    preview(value).encode("utf-8")  # raises UnicodeEncodeError if a surrogate slipped through


def test_mongo_json_safe_refuses_deep_values_without_recursion() -> None:
    assert json_safe(_deep(10)) == _deep(10)
    with pytest.raises(ValueError, match="nested more than 64 levels"):
        json_safe(_deep(5_000))
