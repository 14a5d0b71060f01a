"""contextadmin_sdk.integrations.autogen on real AG2 group chats with scripted agents (no LLM, no
network)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from autogen.agentchat import initiate_group_chat, run_group_chat, run_group_chat_iter
from autogen.agentchat.group import ContextVariables
from contextadmin_sdk.engine import replay
from contextadmin_sdk.integrations.autogen import HandoffRuleError, attach
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.demo_chats.autogen_chat import (
    DEMO_WORKFLOW,
    OPENING,
    demo_pattern,
)

from .chats import (
    INTERVIEW_DONE,
    PLAN_OWNER,
    TO_PLANNER,
    ToolCall,
    attach_demo_chat,
    config,
    derived,
    env_flag,
    failing_tool,
    record_plan,
    two_stage_pattern,
)


def speakers(result: Any) -> list[str]:
    return [message.get("name") for message in result.chat_history]


def run_chat(pattern: Any, session: Any, *, rounds: int = 30) -> Any:
    with session:
        result, _, _ = initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=rounds)
    return result


# -- the demo: every trigger type, both hand-off registrations --------------------------------
def test_demo_chat_speaker_order_context_and_flips() -> None:
    pattern = demo_pattern()
    before = pattern.context_variables
    session = attach_demo_chat(pattern)
    with session:
        result, context, _ = initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)

    assert speakers(result) == [
        "user",
        "InterviewAgent",
        "user",
        "InterviewAgent",
        "user",
        "InterviewAgent",  # NEXT: flips interview_complete...
        "ContextVariablesAgent",  # ...and the after-work rule routes the very next turn
        "_Group_Tool_Executor",  # save_context_plan: flips context_saved on its response...
        "ContextVariablesAgent",  # ...the context condition hands off before it replies
        "HandoffsAgent",
        "HandoffsAgent",  # its second turn flips handoffs_reviewed: the chat terminates
    ]
    assert result.chat_history[8]["content"] == "[Handing off to HandoffsAgent]"
    assert session.context is pattern.context_variables is before is context
    assert context.to_dict() == {
        "enterprise_id": "acme",
        "workflow_name": DEMO_WORKFLOW,
        "context_aware": False,
        "monetization_enabled": False,
        "product_tier": "beta",
        "max_items": 25,
        "interview_complete": True,
        "context_saved": True,
        "handoffs_reviewed": True,
    }
    assert [(f.name, f.cause) for f in session.flips] == [
        ("interview_complete", {"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"}),
        (
            "context_saved",
            {"type": "tool_response", "tool": "save_context_plan", "status": "success"},
        ),
        ("handoffs_reviewed", {"type": "agent_text", "agent": "HandoffsAgent", "turns": 2}),
    ]
    kinds = [
        (e["seq"], e["type"], e.get("agent"), e.get("target"), e.get("rule"))
        for e in session.events
    ]
    assert kinds[5:] == [
        (6, "agent_text", "InterviewAgent", None, None),
        (7, "handoff", "InterviewAgent", "ContextVariablesAgent", 0),
        (8, "tool_response", "ContextVariablesAgent", None, None),
        (9, "handoff", "ContextVariablesAgent", "HandoffsAgent", 1),
        (10, "agent_text", "HandoffsAgent", None, None),
        (11, "agent_text", "HandoffsAgent", None, None),
        (12, "run_status", None, None, None),
    ]
    # The transit message is not a turn: ContextVariablesAgent never spoke text.
    assert session.state.get("execution.turn_counts") == {
        "user": 3,
        "InterviewAgent": 3,
        "HandoffsAgent": 2,
    }
    assert [
        (edge["source"], edge["target"], edge["rule"])
        for edge in session.state.get("execution.path")
    ] == [
        ("InterviewAgent", "ContextVariablesAgent", 0),
        ("ContextVariablesAgent", "HandoffsAgent", 1),
    ]
    assert session.state.get("nodes.save_context_plan.saved") == 6
    assert session.state.get("execution.status") == "completed"
    assert session.skipped_handoffs == []  # monetization_enabled exists (false) in development


def test_handoff_routes_on_the_turn_right_after_the_flip() -> None:
    pattern = two_stage_pattern(
        interview=["Question?", "NEXT", "never said"], answers=["Answer.", "More."]
    )
    session = attach(
        pattern,
        config(INTERVIEW_DONE, handoffs=[TO_PLANNER]),
        workflow_name="W",
        enterprise_id="e",
        environ={},
    )
    result = run_chat(pattern, session)
    assert speakers(result) == ["user", "InterviewAgent", "user", "InterviewAgent", "Planner"]
    flip_seq = session.flips[0] and session.state.flips[0]["seq"]
    handoff = next(e for e in session.events if e["type"] == "handoff")
    assert handoff == {
        "type": "handoff",
        "agent": "InterviewAgent",
        "target": "Planner",
        "rule": 0,
        "seq": flip_seq + 1,
    }


def test_without_the_flip_no_handoff() -> None:
    pattern = two_stage_pattern(interview=["Question?", "Another?"], answers=["A.", "B."])
    session = attach(
        pattern,
        config(INTERVIEW_DONE, handoffs=[TO_PLANNER]),
        workflow_name="W",
        enterprise_id="e",
        environ={},
    )
    result = run_chat(pattern, session, rounds=5)
    assert "Planner" not in speakers(result)
    assert session.flips == [] and session.context["interview_complete"] is False


def test_turn_count_and_tool_triggers_with_an_error_status() -> None:
    cfg = config(
        derived("asked_twice", {"type": "agent_turn_count", "agent": "InterviewAgent", "count": 2}),
        derived(
            "tool_failed", {"type": "tool_response", "tool": "failing_tool", "status": "error"}
        ),
        derived("tool_ok", {"type": "tool_response", "tool": "failing_tool", "status": "success"}),
        handoffs=[
            {
                "source_agent": "InterviewAgent",
                "target_agent": "Planner",
                "condition": "${asked_twice}",
            },
            {"source_agent": "Planner", "target_agent": "Closer", "condition": "${tool_failed}"},
        ],
    )
    pattern = two_stage_pattern(
        interview=["One?", "Two?", "Three?"],
        answers=["1", "2"],
        planner=[ToolCall("failing_tool", reason="boom")],
        tools=[failing_tool],
    )
    session = attach(pattern, cfg, workflow_name="W", enterprise_id="e", environ={})
    result = run_chat(pattern, session)
    assert speakers(result) == [
        "user",
        "InterviewAgent",
        "user",
        "InterviewAgent",  # turn 2: asked_twice flips, after-work routes to Planner
        "Planner",
        "_Group_Tool_Executor",
        "Planner",  # transit: tool_failed flipped on the tool's response
        "Closer",
    ]
    assert [f.name for f in session.flips] == ["asked_twice", "tool_failed"]
    assert session.context["tool_ok"] is False
    tool_event = next(e for e in session.events if e["type"] == "tool_response")
    assert tool_event["status"] == "error" and tool_event["tool"] == "failing_tool"


def test_a_tools_context_change_is_reported_as_context_set() -> None:
    cfg = config(
        derived("planned", {"type": "tool_response", "tool": "record_plan"}),
        database=[PLAN_OWNER],
        handoffs=[TO_PLANNER],
    )
    cfg["context_variables"]["derived_variables"].insert(0, INTERVIEW_DONE)
    pattern = two_stage_pattern(
        interview=["NEXT"],
        answers=[],
        planner=[ToolCall("record_plan", names="a,b")],
        tools=[record_plan],
    )
    session = attach(pattern, cfg, workflow_name="W", enterprise_id="e", environ={})
    run_chat(pattern, session)
    sets = [e for e in session.events if e["type"] == "context_set"]
    assert sets == [
        {"type": "context_set", "name": "plan_owner", "value": "tool", "agent": "Planner",
         "tool": "record_plan", "seq": sets[0]["seq"]}
    ]  # who set it: the tool, called by Planner
    assert session.state.context["plan_owner"] == "tool" == session.context["plan_owner"]
    assert session.context["planned"] is True  # flipped after the ReplyResult merge, and kept


# -- production: conditions naming suppressed variables ---------------------------------------
def test_production_run_with_rules_on_suppressed_variables_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg = config(
        INTERVIEW_DONE,
        environment=[env_flag("monetization_enabled", "MONETIZATION_ENABLED")],
        handoffs=[
            {
                "source_agent": "InterviewAgent",
                "target_agent": "Closer",
                "condition": "${monetization_enabled} and ${interview_complete}",
            },
            TO_PLANNER,
        ],
    )
    pattern = two_stage_pattern(interview=["NEXT"], answers=[])
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.integrations.autogen.session"):
        session = attach(
            pattern,
            cfg,
            workflow_name="W",
            enterprise_id="e",
            environ={"ENVIRONMENT": "production", "MONETIZATION_ENABLED": "1"},
        )
        result = run_chat(pattern, session)
    assert "monetization_enabled" not in session.context.to_dict()
    assert speakers(result) == ["user", "InterviewAgent", "Planner"]  # rule 0 never fires
    assert session.skipped_handoffs == [
        {
            "index": 0,
            "condition": "${monetization_enabled} and ${interview_complete}",
            "reason": "monetization_enabled not in this run's context",
        }
    ]
    warned = [r for r in caplog.records if "hand-off 0" in r.getMessage()]
    assert len(warned) == 1 and "never fires in this environment" in warned[0].getMessage()
    assert session.state.get("execution.status") == "completed"


def test_rules_naming_agents_outside_the_pattern_are_refused() -> None:
    pattern = two_stage_pattern(interview=["NEXT"], answers=[])
    rule = {
        "source_agent": "InterviewAgent",
        "target_agent": "Ghost",
        "condition": "${interview_complete}",
    }
    with pytest.raises(
        HandoffRuleError, match=r"handoffs\[0\]\.target_agent: no agent named 'Ghost'"
    ):
        attach(
            pattern, config(INTERVIEW_DONE, handoffs=[rule]), workflow_name="W", enterprise_id="e"
        )


def test_config_as_path_text_mapping_and_an_empty_context_object(tmp_path: Any) -> None:
    path = tmp_path / "context_variables.json"
    path.write_text(json.dumps(config(INTERVIEW_DONE)))
    for given_config in (path, str(path), path.read_text(), config(INTERVIEW_DONE)):
        pattern = two_stage_pattern(interview=["NEXT"], answers=[])
        mine = ContextVariables()  # empty, so falsy: Pattern.__init__ would replace it
        pattern.context_variables = mine
        session = attach(pattern, given_config, workflow_name="W", enterprise_id="e", environ={})
        assert session.context is mine and mine["interview_complete"] is False


def test_attaching_again_replaces_the_previous_sessions_rules() -> None:
    pattern = two_stage_pattern(interview=["NEXT"], answers=[])
    cfg = config(INTERVIEW_DONE, handoffs=[TO_PLANNER])
    attach(pattern, cfg, workflow_name="W", enterprise_id="e", environ={})
    attach(pattern, cfg, workflow_name="W", enterprise_id="e", environ={})
    interviewer = pattern.agents[0]
    assert len(interviewer.handoffs.context_conditions) == 1
    assert len(interviewer.handoffs.after_works) == 2  # ours, then RevertToUser last


# -- other ways to run the chat -----------------------------------------------------------------
@pytest.mark.parametrize("run", [run_group_chat_iter, run_group_chat])
def test_run_group_chat_and_its_iter_through_session_iterate_are_observed_once(run: Any) -> None:
    """Both run the chat on AG2's own thread, where the session observes it; session.iterate
    passes their events on (code written against earlier versions), counting none twice."""
    pattern = two_stage_pattern(interview=["Q?", "NEXT"], answers=["A."])
    session = attach(
        pattern,
        config(INTERVIEW_DONE, handoffs=[TO_PLANNER]),
        workflow_name="W",
        enterprise_id="e",
        environ={},
    )
    with session:
        for _ in session.iterate(run(pattern, messages="Start.", max_rounds=10)):
            pass
    assert [e["type"] for e in session.events][-3:] == ["handoff", "agent_text", "run_status"]
    said = [e["agent"] for e in session.events if e["type"] == "agent_text"]
    assert said == ["user", "InterviewAgent", "user", "InterviewAgent", "Planner"]
    assert [e["seq"] for e in session.events] == list(range(1, len(session.events) + 1))


# -- replay property ----------------------------------------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.sampled_from(["NEXT", "next ", "Q?", "  Next", "other"]), min_size=1, max_size=6
    ),
    answers=st.lists(st.sampled_from(["yes", "NEXT", "no"]), max_size=6),
    count=st.integers(min_value=1, max_value=4),
)
def test_replaying_the_captured_events_gives_the_live_flips(
    lines: list[str], answers: list[str], count: int
) -> None:
    cfg = config(
        INTERVIEW_DONE,
        derived("talked", {"type": "agent_turn_count", "agent": "InterviewAgent", "count": count}),
        derived(
            "user_said_next", {"type": "agent_text", "agent": "user", "match": {"equals": "NEXT"}}
        ),
        handoffs=[TO_PLANNER],
    )
    with IOSilence():
        pattern = two_stage_pattern(interview=lines, answers=answers)
        session = attach(pattern, cfg, workflow_name="W", enterprise_id="e", environ={})
        run_chat(pattern, session, rounds=14)
    base = {
        "enterprise_id": "e",
        "workflow_name": "W",
        "product_tier": "beta",
        "context_aware": False,
        "monetization_enabled": False,
    }
    replayed = replay(cfg, base, session.events)
    assert replayed.flips == session.state.flips
    assert [f["name"] for f in replayed.flips] == [f.name for f in session.flips]
    assert replayed.context == session.state.context
    for name in ("interview_complete", "talked", "user_said_next"):
        assert session.context[name] == replayed.context[name]


class IOSilence:
    """The autouse fixture is per test, not per hypothesis example: silence each example."""

    def __enter__(self) -> None:
        from autogen.io import IOStream

        from .conftest import SilentStream

        self._cm = IOStream.set_default(SilentStream())
        self._cm.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._cm.__exit__(*exc)
