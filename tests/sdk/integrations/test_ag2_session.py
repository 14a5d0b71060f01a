"""contextadmin_sdk.integrations.ag2 on real AG2 1.x workflow channels: an in-process hub, scripted
turns
(ag2.testing.TestConfig, one client reused across turns), no LLM, no network."""

from __future__ import annotations

import logging

import pytest
from ag2.network import AgentTarget, ChannelInject, FromSpeaker, Transition
from ag2.network.workflow_helpers import set_context
from contextadmin_sdk.engine import build_context, replay
from contextadmin_sdk.integrations.ag2 import HandoffRuleError, attach

from runs.demo_chats.ag2_workflow import DEMO_CONFIG, DEMO_WORKFLOW, demo_workflow, run_demo

from .chats import PLAN_OWNER, attach_demo_chat, config, derived, env_flag
from .workflows import (
    INTERVIEW_DONE,
    TO_PLANNER,
    ToolCall,
    attach_demo,
    failing_tool,
    record_plan,
    speakers,
    two_stage,
)


async def test_demo_workflow_context_flips_handoffs_and_path() -> None:
    demo = await demo_workflow()
    session = attach_demo(demo)
    with session:
        reason = await run_demo(demo, session)
    assert reason == "reviewed"  # the graph's own ContextEquals(handoffs_reviewed) ended it
    assert speakers(session) == [
        "user",
        "InterviewAgent",
        "user",
        "InterviewAgent",
        "user",
        "InterviewAgent",  # NEXT: flips interview_complete...
        "ContextVariablesAgent",  # ...and hand-off 0 routes the very next turn
        "HandoffsAgent",  # context_saved flipped on the tool's result, in the same turn
        "user",
        "HandoffsAgent",  # its second turn flips handoffs_reviewed
    ]
    assert session.context == {
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
    assert session.context == session.state.context
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
    assert kinds[5:10] == [
        (6, "agent_text", "InterviewAgent", None, None),
        (7, "handoff", "InterviewAgent", "ContextVariablesAgent", 0),
        (8, "tool_response", "ContextVariablesAgent", None, None),
        (9, "agent_text", "ContextVariablesAgent", None, None),
        (10, "handoff", "ContextVariablesAgent", "HandoffsAgent", 1),
    ]
    assert [
        (edge["source"], edge["target"], edge["rule"])
        for edge in session.state.get("execution.path")
    ] == [
        ("InterviewAgent", "ContextVariablesAgent", 0),
        ("ContextVariablesAgent", "HandoffsAgent", 1),
    ]
    assert session.state.get("nodes.save_context_plan.saved") == 6
    assert session.state.get("execution.status") == "completed"
    assert session.skipped_handoffs == [] and session.warnings == []
    # Replaying the reported events rebuilds the same state (the server's fold).
    base = build_context(
        DEMO_CONFIG.read_bytes(), workflow_name=DEMO_WORKFLOW, enterprise_id="acme", environ={}
    ).values
    replayed = replay(DEMO_CONFIG.read_bytes(), base, session.events)
    assert replayed.flips == session.state.flips and replayed.context == session.state.context
    await demo.hub.close()


async def test_seeded_context_vars_are_what_a_classic_run_gets() -> None:
    from autogen.agentchat.group import ContextVariables

    from runs.demo_chats.autogen_chat import demo_pattern

    environ = {"CONTEXT_AWARE": "yes", "MONETIZATION_ENABLED": "0"}
    pattern = demo_pattern()
    pattern.context_variables = ContextVariables()
    attach_demo_chat(pattern, environ=environ)
    demo = await demo_workflow()
    session = attach_demo(
        demo,
        environ=environ,
    )
    knobs = session.knobs(context_vars={"mine": 1}, labels_seen=True)
    assert {k: v for k, v in knobs["context_vars"].items() if k != "mine"} == (
        pattern.context_variables.to_dict()
    )
    assert knobs["context_vars"]["mine"] == 1 and knobs["labels_seen"] is True
    assert knobs["context_vars"]["context_aware"] is True
    await demo.hub.close()


async def test_turn_count_and_an_error_status_route_and_a_tool_context_set_is_reported() -> None:
    cfg = config(
        derived("asked_twice", {"type": "agent_turn_count", "agent": "InterviewAgent", "count": 2}),
        derived(
            "tool_failed", {"type": "tool_response", "tool": "failing_tool", "status": "error"}
        ),
        derived("planned", {"type": "tool_response", "tool": "record_plan"}),
        database=[PLAN_OWNER],
        handoffs=[
            {
                "source_agent": "InterviewAgent",
                "target_agent": "Planner",
                "condition": "${asked_twice}",
            },
            {"source_agent": "Planner", "target_agent": "Closer", "condition": "${tool_failed}"},
        ],
    )
    workflow = await two_stage(
        interview=["One?", "Two?", "Three?"],
        answers=["1", "2"],
        planner=[
            ToolCall("record_plan", names="a,b"),
            ToolCall("failing_tool", reason="boom"),
            "Tried.",
        ],
        tools=[record_plan, failing_tool],
    )
    session = workflow.attach(cfg)
    with session:
        await workflow.run(session)
    assert speakers(session) == [
        "user",
        "InterviewAgent",
        "user",
        "InterviewAgent",
        "Planner",
        "Closer",
    ]
    assert [f.name for f in session.flips] == ["asked_twice", "planned", "tool_failed"]
    sets = [e for e in session.events if e["type"] == "context_set"]
    assert sets == [  # who set it: the agent and the tool it was running
        {
            "type": "context_set",
            "name": "plan_owner",
            "value": "tool",
            "agent": "Planner",
            "tool": "record_plan",
            "seq": sets[0]["seq"],
        }
    ]
    responses = [e for e in session.events if e["type"] == "tool_response"]
    assert [(e["tool"], e["status"]) for e in responses] == [
        ("record_plan", "success"),
        ("failing_tool", "error"),
    ]
    assert sets[0]["seq"] < responses[0]["seq"]  # the tool's set_context, then its response
    assert session.state.context["plan_owner"] == "tool" == session.context["plan_owner"]
    assert [
        (e["agent"], e["target"], e.get("rule")) for e in session.events if e["type"] == "handoff"
    ] == [("InterviewAgent", "Planner", 0), ("Planner", "Closer", 1)]
    await workflow.hub.close()


# -- production: conditions naming suppressed variables ---------------------------------------
async def test_production_run_with_a_rule_on_a_suppressed_variable_completes(
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
    workflow = await two_stage(interview=["NEXT"], answers=[])
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.integrations.ag2"):
        session = workflow.attach(
            cfg,
            environ={"ENVIRONMENT": "production", "MONETIZATION_ENABLED": "1"},
        )
        with session:
            await workflow.run(session)
    assert "monetization_enabled" not in session.knobs()["context_vars"]
    assert "monetization_enabled" not in session.context
    assert speakers(session) == ["user", "InterviewAgent", "Planner"]  # rule 0 never fires
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
    await workflow.hub.close()


async def test_a_rule_naming_an_agent_outside_the_channel_is_refused() -> None:
    workflow = await two_stage(interview=["NEXT"], answers=[])
    rule = {"source_agent": "InterviewAgent", "target_agent": "Ghost", "condition": "${x}"}
    cfg = config(
        derived("x", {"type": "agent_turn_count", "agent": "Closer", "count": 1}), handoffs=[rule]
    )
    with pytest.raises(HandoffRuleError) as refused:
        attach(workflow.graph, cfg, workflow_name="W", enterprise_id="e", **workflow.attach_args())
    assert "handoffs[0].target_agent: no agent named 'Ghost' in the channel" in str(refused.value)
    assert "Closer, InterviewAgent, Planner, user" in str(refused.value)
    await workflow.hub.close()


async def test_a_classic_pattern_and_a_1x_workflow_are_sent_to_the_right_module() -> None:
    from contextadmin_sdk.integrations.autogen import attach as attach_classic

    from runs.demo_chats.autogen_chat import demo_pattern

    with pytest.raises(
        TypeError, match=r"AG2 Classic DefaultPattern: .*contextadmin_sdk\.integrations\.autogen"
    ):
        attach(demo_pattern(), DEMO_CONFIG, workflow_name="W", enterprise_id="e")
    workflow = await two_stage(interview=["NEXT"], answers=[])
    for thing in (workflow.graph, workflow.agents[0]):
        with pytest.raises(TypeError, match=r"AG2 1\.x .*contextadmin_sdk\.integrations\.ag2"):
            attach_classic(thing, DEMO_CONFIG, workflow_name="W", enterprise_id="e")
    with pytest.raises(TypeError, match="hub="):
        attach(workflow.graph, DEMO_CONFIG, workflow_name="W", enterprise_id="e")
    await workflow.hub.close()


async def test_both_adapters_name_a_wrong_or_missing_option_before_opening_a_run() -> None:
    """The options are one TypedDict (RunOptions) for both adapters: a typo or a missing
    required keyword is a TypeError naming it, and no run is started."""
    from contextadmin_sdk.integrations.autogen import attach as attach_classic

    from runs.demo_chats.autogen_chat import demo_pattern

    workflow = await two_stage(interview=["NEXT"], answers=[])
    cases = (
        (lambda **kw: attach(workflow.graph, DEMO_CONFIG, **workflow.attach_args(), **kw)),
        (lambda **kw: attach_classic(demo_pattern(), DEMO_CONFIG, **kw)),
    )
    for adapter in cases:
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'workflow_nam'$"):
            adapter(workflow_nam="W", enterprise_id="e")
        with pytest.raises(TypeError, match=r"missing required keyword argument: 'enterprise_id'"):
            adapter(workflow_name="W")
    await workflow.hub.close()


async def set_flags(channel: ChannelInject) -> str:
    """Set a derived flag and try to change a declarative constant (refused: a warning)."""
    await set_context(channel, "interview_complete", True)
    await set_context(channel, "product_tier", "gold")
    return "set"


async def test_a_tools_set_context_of_a_derived_flag_flips_it_and_a_refused_one_warns() -> None:
    workflow = await two_stage(
        interview=["Question?"],
        answers=[],
        planner=[ToolCall("set_flags"), "Flags set."],
        tools=[set_flags],
    )
    ids = workflow.hub.name_to_id_map()
    workflow.graph.transitions.insert(
        0, Transition(FromSpeaker(ids["InterviewAgent"]), AgentTarget(ids["Planner"]))
    )
    session = workflow.attach(
        config(
            INTERVIEW_DONE,
            handoffs=[{**TO_PLANNER, "source_agent": "Planner", "target_agent": "Closer"}],
        ),
    )
    with session:
        await workflow.run(session)
    sets = [e for e in session.events if e["type"] in ("context_set", "warning")]
    assert [(e["type"], e["name"], e["value"]) for e in sets] == [
        ("context_set", "interview_complete", True),
        ("warning", "product_tier", "gold"),
    ]
    assert sets[0]["agent"] == "Planner"
    assert [(f.name, f.cause.get("type")) for f in session.flips] == [
        ("interview_complete", "context_set")
    ]
    # The flag the tool set routes the Planner's packet: rule 0 (Planner -> Closer) fired.
    assert speakers(session)[-2:] == ["Planner", "Closer"]
    assert any("product_tier" in w for w in session.warnings)
    await workflow.hub.close()


async def test_a_workflow_that_raises_pauses_the_run() -> None:
    workflow = await two_stage(interview=["NEXT"], answers=[])
    session = workflow.attach(config(INTERVIEW_DONE, handoffs=[TO_PLANNER]))
    with pytest.raises(TimeoutError):
        async with session:
            await session.finished(timeout=0.05)  # the channel was never opened
    assert session.state.get("execution.status") == "paused"  # resumable with run_id=...
    assert session.events[-1] == {"type": "run_status", "status": "paused", "seq": 1}
    assert any("observed no AG2 1.x events" in w for w in session.warnings)
    await workflow.hub.close()
