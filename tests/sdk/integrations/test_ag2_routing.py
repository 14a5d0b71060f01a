"""How a 1.x workflow routes on contextadmin's rules: on the turn right after the flip (and why
not from a hub listener), never on an absent variable, as registered data that survives
``to_dict``/``loads`` and a hub restore."""

from __future__ import annotations

import json
from typing import Any

from ag2.network import TransitionGraph
from contextadmin_sdk.integrations.ag2 import ContextRule, attach

from runs.demo_chats.ag2_workflow import demo_workflow, run_demo

from .chats import config, derived
from .workflows import INTERVIEW_DONE, TO_PLANNER, attach_demo, speakers, two_stage


async def test_the_workflow_routes_on_the_turn_right_after_the_flip() -> None:
    workflow = await two_stage(interview=["Question?", "NEXT", "never said"], answers=["A."])
    session = workflow.attach(config(INTERVIEW_DONE, handoffs=[TO_PLANNER]))
    with session:
        await workflow.run(session)
    assert speakers(session) == ["user", "InterviewAgent", "user", "InterviewAgent", "Planner"]
    flip_seq = session.state.flips[0]["seq"]
    handoff = next(e for e in session.events if e["type"] == "handoff")
    assert handoff == {
        "type": "handoff",
        "agent": "InterviewAgent",
        "target": "Planner",
        "rule": 0,
        "seq": flip_seq + 1,
    }
    await workflow.hub.close()


async def test_without_the_flip_no_handoff() -> None:
    workflow = await two_stage(interview=["Question?", "Another?"], answers=["A.", "B."])
    session = workflow.attach(config(INTERVIEW_DONE, handoffs=[TO_PLANNER]))
    session.graph.max_turns = 5
    with session:
        assert await workflow.run(session) == "max_turns"
    assert "Planner" not in speakers(session)
    assert session.flips == [] and session.context["interview_complete"] is False
    await workflow.hub.close()


def test_a_rule_condition_naming_an_absent_variable_is_false_and_never_raises() -> None:
    rule = ContextRule(source="a1", condition="${monetization_enabled} and ${done}", rule=0)

    class State:
        context_vars = {"done": True}

    class Envelope:
        sender_id = "a1"

    assert rule.evaluate(State(), Envelope()) is False
    State.context_vars = {"done": True, "monetization_enabled": True}
    assert rule.evaluate(State(), Envelope()) is True
    assert ContextRule(source="a1", condition="${", rule=0).evaluate(State(), Envelope()) is False
    Envelope.sender_id = "someone else"
    assert rule.evaluate(State(), Envelope()) is False


async def test_the_rules_are_registered_data_that_survive_to_dict_and_loads() -> None:
    workflow = await two_stage(interview=["NEXT"], answers=[])
    session = workflow.attach(config(INTERVIEW_DONE, handoffs=[TO_PLANNER]))
    data = json.loads(json.dumps(session.knobs()["graph"]))  # what the hub persists
    graph = TransitionGraph.loads(data)
    ids = workflow.hub.name_to_id_map()
    first = graph.transitions[0]
    assert first.when == ContextRule(ids["InterviewAgent"], "${interview_complete}", 0)
    assert first.then.agent_id == ids["Planner"] and first.priority == -1
    assert len(graph.transitions) == 1 + len(workflow.graph.transitions)
    assert graph.to_dict() == data
    # attaching again replaces the rules rather than stacking them
    again = attach(
        session.graph,
        config(INTERVIEW_DONE, handoffs=[TO_PLANNER]),
        workflow_name="W",
        enterprise_id="e",
        environ={},
        **workflow.attach_args(),
    )
    assert len(again.graph.transitions) == len(graph.transitions)
    await workflow.hub.close()


async def test_a_hub_restored_from_its_store_refolds_the_workflow_with_the_rules() -> None:
    from ag2.knowledge import MemoryKnowledgeStore
    from contextadmin_sdk.integrations.ag2.scripted import in_process_hub

    store = MemoryKnowledgeStore()
    demo = await demo_workflow(store=store)
    session = attach_demo(demo)
    with session:
        await run_demo(demo, session)
    channel_id = session.channel_id
    assert channel_id is not None
    await demo.hub.close()
    restored = await in_process_hub(store)  # Hub.open hydrates: re-folds every channel's WAL
    state = restored.adapter_state(channel_id)
    assert state.context_vars == session.state.context
    graph = TransitionGraph.loads(state.graph_data)
    assert [t.when.rule for t in graph.transitions if isinstance(t.when, ContextRule)] == [0, 1, 2]
    assert state.expected_next_speaker is None and state.pending_close_reason == "reviewed"
    await restored.close()


async def test_a_flip_posted_from_a_hub_listener_would_route_one_turn_late() -> None:
    """Why the adapter flips from the agent's middleware: AG2 picks the next speaker while it
    folds the turn's packet, before any hub listener runs."""
    from ag2.network import (
        EV_CONTEXT_SET,
        EV_PACKET,
        AgentTarget,
        BaseHubListener,
        ContextEquals,
        Envelope,
        FromSpeaker,
        TerminateTarget,
        Transition,
    )

    workflow = await two_stage(interview=["Question?", "NEXT", "Again?"], answers=["A.", "B."])
    hub, ids = workflow.hub, workflow.hub.name_to_id_map()
    graph = workflow.graph
    graph.transitions[:0] = [
        Transition(FromSpeaker(ids["Planner"]), TerminateTarget(), priority=-2),
        Transition(ContextEquals("done", True), AgentTarget(ids["Planner"]), priority=-1),
    ]
    spoken: list[str] = []

    class LateFlipper(BaseHubListener):
        async def on_envelope_posted(self, envelope: Any, metadata: Any) -> None:
            if envelope.event_type == EV_PACKET or envelope.event_type == "ag2.msg.text":
                spoken.append(hub.name_for(envelope.sender_id))
            if envelope.event_type == EV_PACKET and envelope.event_data.get("body") == "NEXT":
                await hub.post_envelope(
                    Envelope(
                        envelope.channel_id,
                        envelope.sender_id,
                        None,
                        EV_CONTEXT_SET,
                        {"set": {"done": True}},
                    )
                )

    hub.register_listener(LateFlipper())
    session = attach(
        graph, config(), workflow_name="W", enterprise_id="e", environ={}, **workflow.attach_args()
    )
    with session:
        await workflow.run(session)
    # NEXT, then the user still speaks: the flip landed after the fold chose the next speaker.
    assert spoken == ["user", "InterviewAgent", "user", "InterviewAgent", "user", "Planner"]
    await hub.close()


async def test_a_flag_a_humans_text_flips_routes_on_the_very_next_turn_too() -> None:
    user_go = derived("user_go", {"type": "agent_text", "agent": "user", "match": {"equals": "GO"}})
    rule = {"source_agent": "user", "target_agent": "Planner", "condition": "${user_go}"}
    workflow = await two_stage(interview=["Question?", "never said"], answers=["GO"])
    session = workflow.attach(config(user_go, handoffs=[rule]))
    with session:
        await workflow.run(session)
    # The hub's arbiter showed the text to the session before the graph folded it.
    assert speakers(session) == ["user", "InterviewAgent", "user", "Planner"]
    flip_seq = session.state.flips[0]["seq"]
    handoff = next(e for e in session.events if e["type"] == "handoff")
    assert handoff == {
        "type": "handoff",
        "agent": "user",
        "target": "Planner",
        "rule": 0,
        "seq": flip_seq + 1,
    }
    assert workflow.hub.arbiter.__class__.__name__ == "RuleBasedArbiter"  # restored on exit
    await workflow.hub.close()
