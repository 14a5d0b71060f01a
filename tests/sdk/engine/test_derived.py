"""DerivedContextManager: seed 000 "Derived Variable Engine", seed 001, docs/engine.md."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace
from typing import Any

import pytest
from contextadmin_sdk.engine import TRIGGER_LOADERS, DerivedContextManager, Flip
from contextadmin_sdk.engine import derived as derived_module
from contextadmin_sdk.engine.format import TRIGGER_TYPES, ConfigError

from .support import config_with, demo_config, derived_var, says, text, tool


def manager(*variables: dict[str, Any]) -> DerivedContextManager:
    return DerivedContextManager(config_with(derived_variables=list(variables)))


# -- agent_text matching ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("match", "said", "flips"),
    [
        pytest.param({}, "NEXT", True, id="exact"),
        pytest.param({}, "next", True, id="any-case-by-default"),
        pytest.param({}, "  Next \n", True, id="trimmed-by-default"),
        pytest.param({}, "NEXT please", False, id="no-substring"),
        pytest.param({}, "N E X T", False, id="no-fuzzy"),
        pytest.param({}, "", False, id="empty"),
        pytest.param({"case_sensitive": True}, "next", False, id="case-sensitive-rejects-case"),
        pytest.param({"case_sensitive": True}, " NEXT ", True, id="case-sensitive-still-trims"),
        pytest.param({"trim": False}, " NEXT", False, id="no-trim-rejects-space"),
        pytest.param({"trim": False}, "next", True, id="no-trim-still-any-case"),
        pytest.param({"case_sensitive": True, "trim": False}, "NEXT", True, id="seed-001-exact"),
        pytest.param(
            {"case_sensitive": True, "trim": False}, "NEXT ", False, id="seed-001-exact-space"
        ),
    ],
)
def test_agent_text_matching(match: dict[str, Any], said: str, flips: bool) -> None:
    mgr = manager(derived_var("done", says("InterviewAgent", "NEXT", **match)))
    values = mgr.defaults()
    result = mgr.observe(text("InterviewAgent", said), values)
    assert values["done"] is flips
    assert [f.name for f in result] == (["done"] if flips else [])


def test_configured_text_is_normalised_too() -> None:
    mgr = manager(derived_var("done", says("A", "  Ready ")))
    values = mgr.defaults()
    assert mgr.observe(text("A", "READY"), values)


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(text("InterviewAgent", "NEXT"), id="string-agent"),
        pytest.param(
            {"type": "agent_text", "sender": "InterviewAgent", "text": "NEXT"}, id="sender-key"
        ),
        pytest.param(text(SimpleNamespace(name="InterviewAgent"), "NEXT"), id="object-with-name"),
        pytest.param(text({"name": "InterviewAgent"}, "NEXT"), id="mapping-with-name"),
    ],
)
def test_sender_forms(event: dict[str, Any]) -> None:
    mgr = manager(derived_var("done", says("InterviewAgent", "NEXT")))
    values = mgr.defaults()
    assert [f.name for f in mgr.observe(event, values)] == ["done"]


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(text("interviewagent", "NEXT"), id="agent-names-are-exact"),
        pytest.param(text("OtherAgent", "NEXT"), id="other-agent"),
        pytest.param(
            text(SimpleNamespace(title="InterviewAgent"), "NEXT"), id="object-without-name"
        ),
        pytest.param({"type": "agent_text", "text": "NEXT"}, id="no-sender"),
        pytest.param({"type": "agent_text", "agent": "InterviewAgent", "text": None}, id="no-text"),
        pytest.param(
            {"type": "tool_response", "agent": "InterviewAgent", "text": "NEXT"}, id="wrong-type"
        ),
    ],
)
def test_non_matching_events(event: Any) -> None:
    mgr = manager(derived_var("done", says("InterviewAgent", "NEXT")))
    values = mgr.defaults()
    assert mgr.observe(event, values) == []
    assert values == {"done": False}


# -- agent_turn_count -------------------------------------------------------------------------
def test_agent_turn_count_counts_only_that_agents_messages() -> None:
    mgr = manager(derived_var("chatty", {"type": "agent_turn_count", "agent": "A", "count": 3}))
    values = mgr.defaults()
    timeline = [("A", False), ("B", False), ("A", False), ("B", False), ("A", True), ("A", False)]
    for agent, flips in timeline:
        assert bool(mgr.observe(text(agent, "hi"), values)) is flips, agent
    assert values["chatty"] is True


@pytest.mark.parametrize(("turns", "flips"), [(0, False), (2, False), (3, True), (9, True)])
def test_agent_turn_count_with_caller_counts(turns: int, flips: bool) -> None:
    mgr = manager(derived_var("chatty", {"type": "agent_turn_count", "agent": "A", "count": 3}))
    values = mgr.defaults()
    result = mgr.observe(text("A", "hi"), values, turn_counts={"A": turns})
    assert bool(result) is flips
    if flips:
        assert result[0].cause == {"type": "agent_text", "agent": "A", "turns": turns}


def test_caller_counts_do_not_touch_the_managers_own_count() -> None:
    mgr = manager(derived_var("chatty", {"type": "agent_turn_count", "agent": "A", "count": 2}))
    values = mgr.defaults()
    mgr.observe(text("A", "1"), values, turn_counts={"A": 1})
    assert mgr.observe(text("A", "2"), values) == []  # its own count is 1 now
    assert mgr.observe(text("A", "3"), values)


# -- tool_response ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("trigger_status", "event", "flips"),
    [
        pytest.param(None, tool("save_plan", "success"), True, id="any-status"),
        pytest.param(None, tool("save_plan"), True, id="no-status-at-all"),
        pytest.param("success", tool("save_plan", "success"), True, id="status-matches"),
        pytest.param("success", tool("save_plan", "error"), False, id="status-differs"),
        pytest.param("success", tool("save_plan", "SUCCESS"), False, id="status-is-exact"),
        pytest.param("success", tool("save_plan"), False, id="status-missing"),
        pytest.param(None, tool("other_tool", "success"), False, id="other-tool"),
        pytest.param(None, text("save_plan", "success"), False, id="agent-text-is-not-a-tool"),
    ],
)
def test_tool_response(trigger_status: str | None, event: dict[str, Any], flips: bool) -> None:
    trigger: dict[str, Any] = {"type": "tool_response", "tool": "save_plan"}
    if trigger_status:
        trigger["status"] = trigger_status
    mgr = manager(derived_var("saved", trigger))
    values = mgr.defaults()
    result = mgr.observe(event, values)
    assert values["saved"] is flips
    if flips:
        assert result[0].cause == {
            "type": "tool_response",
            "tool": "save_plan",
            "status": event.get("status"),
        }


# -- several triggers, idempotency, order -----------------------------------------------------
def test_any_trigger_flips_the_variable_and_records_which() -> None:
    mgr = manager(
        derived_var(
            "done",
            says("A", "finish"),
            says("B", "done"),
            {"type": "tool_response", "tool": "close"},
        )
    )
    values = mgr.defaults()
    assert mgr.observe(text("A", "nope"), values) == []
    flips = mgr.observe(text("B", "Done"), values)
    assert [(f.name, f.value, f.trigger_index) for f in flips] == [("done", True, 1)]


def test_flips_are_idempotent() -> None:
    mgr = manager(
        derived_var("done", says("A", "go"), {"type": "agent_turn_count", "agent": "A", "count": 1})
    )
    values = mgr.defaults()
    first = mgr.observe(text("A", "go"), values)
    assert [(f.name, f.trigger_index) for f in first] == [("done", 0)]  # one flip, not two
    assert mgr.observe(text("A", "go"), values) == []
    assert values["done"] is True


def test_already_true_records_no_flip() -> None:
    mgr = manager(derived_var("done", says("A", "go")))
    values = {"done": True}
    assert mgr.observe(text("A", "go"), values) == []


def test_a_flag_reset_by_the_runtime_can_flip_again() -> None:
    mgr = manager(derived_var("done", says("A", "go")))
    values = mgr.defaults()
    mgr.observe(text("A", "go"), values)
    values["done"] = False
    assert len(mgr.observe(text("A", "go"), values)) == 1


def test_one_event_can_flip_several_variables_in_config_order() -> None:
    mgr = manager(
        derived_var("b_flag", says("A", "go")),
        derived_var("a_flag", says("A", "GO")),
        derived_var("other", says("B", "go")),
    )
    values = mgr.defaults()
    assert [f.name for f in mgr.observe(text("A", "go"), values)] == ["b_flag", "a_flag"]
    assert values == {"b_flag": True, "a_flag": True, "other": False}


def test_events_only_reach_triggers_that_can_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triggers are indexed by (event type, agent-or-tool): one event costs O(matching triggers)."""
    calls: list[str] = []
    original = derived_module.AgentTextTrigger.matches

    def counting(self: Any, event: Any, *, turn_counts: Any) -> bool:
        calls.append(self.agent)
        return original(self, event, turn_counts=turn_counts)

    monkeypatch.setattr(derived_module.AgentTextTrigger, "matches", counting)
    mgr = manager(*[derived_var(f"flag_{i}", says(f"Agent{i}", "go")) for i in range(200)])
    values = mgr.defaults()
    mgr.observe(text("Agent7", "go"), values)
    mgr.observe(text("Nobody", "go"), values)
    mgr.observe(tool("Agent8"), values)
    assert calls == ["Agent7"]
    assert [name for name, value in values.items() if value] == ["flag_7"]


# -- defaults, inertness, flips ---------------------------------------------------------------
def test_defaults() -> None:
    mgr = manager(derived_var("a", says("A", "x")), derived_var("b", says("A", "y"), default=True))
    assert mgr.defaults() == {"a": False, "b": True}
    mgr.defaults()["a"] = True
    assert mgr.defaults()["a"] is False  # a copy each time


def test_inert_without_derived_variables() -> None:
    mgr = DerivedContextManager(config_with(declarative_variables=[{"name": "x", "value": 1}]))
    values: dict[str, Any] = {"x": 1}
    assert mgr.inert and mgr.defaults() == {}
    assert mgr.observe(text("A", "go"), values) == []
    assert values == {"x": 1}


def test_invalid_config_raises_with_the_path() -> None:
    with pytest.raises(ConfigError, match=r"derived_variables\[0\]\.triggers\[0\]\.agent"):
        manager(derived_var("done", {"type": "agent_text", "match": {"equals": "x"}}))


def test_flip_is_frozen_hashable_and_json_safe() -> None:
    mgr = DerivedContextManager(demo_config())
    values = mgr.defaults()
    (flip,) = mgr.observe(text("InterviewAgent", "NEXT"), values)
    assert flip == Flip(
        "interview_complete",
        True,
        0,
        {"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"},
    )
    assert json.loads(json.dumps(flip.as_dict())) == {
        "name": "interview_complete",
        "value": True,
        "trigger_index": 0,
        "cause": {"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"},
    }
    hash(flip)
    with pytest.raises(dataclasses.FrozenInstanceError):
        flip.value = False  # type: ignore[misc]


def test_flip_cause_text_is_a_short_preview() -> None:
    said = "go" + " " * 500
    mgr = manager(derived_var("done", says("A", "go")))
    (flip,) = mgr.observe(text("A", said), mgr.defaults())
    assert len(flip.cause["text"]) == derived_module.CAUSE_TEXT_MAX_CHARS + 1
    assert flip.cause["text"].endswith("…")


def test_registry_covers_every_schema_trigger_type() -> None:
    assert set(TRIGGER_LOADERS) == set(TRIGGER_TYPES)
    for name, cls in TRIGGER_LOADERS.items():
        assert issubclass(cls, derived_module.DerivedTrigger), name


def test_demo_log_flips_interview_complete_on_the_fifth_event() -> None:
    from .support import demo_events

    mgr = DerivedContextManager(demo_config())
    values = mgr.defaults()
    flipped_at = [i for i, event in enumerate(demo_events(), 1) if mgr.observe(event, values)]
    assert flipped_at == [5]
