"""One hub, the same agents, two workflow channels at once: each run gets its own channel's
turns, flips and hand-offs (the agents' hook served only the last session attached, so the first
run lost every agent turn and looped to max_turns). And the scripted human the docs' quick start
uses: an answer that meets a channel already closed ends its part quietly (it printed AG2's
ProtocolError traceback). Real AG2 1.x, scripted turns."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from ag2.network import (
    WORKFLOW_TYPE,
    AgentTarget,
    FromSpeaker,
    RevertToInitiatorTarget,
    TerminateTarget,
    Transition,
    TransitionGraph,
)
from contextadmin_sdk.integrations.ag2 import attach
from contextadmin_sdk.integrations.ag2.scripted import (
    ScriptedHuman,
    in_process_hub,
    register_human,
    scripted_agent,
)

from runs.demo_chats.ag2_workflow import DEMO_CONFIG, DEMO_WORKFLOW


def graph(human: Any, ids: dict[str, str], *, max_turns: int = 12) -> TransitionGraph:
    """The human opens; the InterviewAgent answers; back to the human; the planner ends it."""
    return TransitionGraph(
        initial_speaker=human.agent_id,
        transitions=[
            Transition(FromSpeaker(human.agent_id), AgentTarget(ids["InterviewAgent"])),
            Transition(FromSpeaker(ids["InterviewAgent"]), RevertToInitiatorTarget()),
            Transition(FromSpeaker(ids["ContextVariablesAgent"]), TerminateTarget()),
        ],
        max_turns=max_turns,
    )


async def registered(hub: Any) -> list[Any]:
    """The three scripted agents, registered on ``hub``."""
    agents = [
        scripted_agent("InterviewAgent", ["NEXT"], after="NEXT", delay=0.05),
        scripted_agent("ContextVariablesAgent", ["Declaring."], after="Declaring.", delay=0.05),
        scripted_agent("HandoffsAgent", ["x"]),
    ]
    for agent in agents:
        await hub.register(agent, attach_plugin=False)
    return agents


async def test_two_workflows_on_one_hub_with_the_same_agents_each_report_their_own_run() -> None:
    hub = await in_process_hub()
    alice, bob = await register_human(hub, "alice"), await register_human(hub, "bob")
    agents = await registered(hub)
    ids = hub.name_to_id_map()
    ScriptedHuman(hub, alice, ["answer from alice"])
    ScriptedHuman(hub, bob, ["answer from bob"])
    humans = {"alice": alice, "bob": bob}
    sessions = {
        name: attach(graph(human, ids), DEMO_CONFIG, hub=hub, agents=agents,
                     workflow_name=DEMO_WORKFLOW, enterprise_id=name, environ={})
        for name, human in humans.items()
    }

    async def run(name: str) -> str:
        session, human = sessions[name], humans[name]
        async with session:
            channel = await human.open(
                type=WORKFLOW_TYPE, target=[a.name for a in agents], knobs=session.knobs()
            )
            await human.send(channel.channel_id, f"hi from {name}")
            return str(await session.finished(timeout=30))

    try:
        await asyncio.gather(run("alice"), run("bob"))
    finally:
        await hub.close()
    for name, session in sessions.items():
        said = [(e["agent"], e["text"]) for e in session.events if e["type"] == "agent_text"]
        assert said[:2] == [(name, f"hi from {name}"), ("InterviewAgent", "NEXT")]
        assert all(who in (name, "InterviewAgent", "ContextVariablesAgent")
                   for who, _ in said)  # nothing of the other run
        assert [flip.name for flip in session.flips] == ["interview_complete"]
        handoffs = [e for e in session.events if e["type"] == "handoff"]
        assert ("InterviewAgent", "ContextVariablesAgent", 0) in [
            (e["agent"], e["target"], e.get("rule")) for e in handoffs
        ]
        assert session.state.get("execution.status") == "completed"


async def test_a_second_single_agent_session_on_the_same_agent_is_refused() -> None:
    agent = scripted_agent("InterviewAgent", ["NEXT"])
    first = attach(agent, DEMO_CONFIG, workflow_name=DEMO_WORKFLOW, enterprise_id="a", environ={})
    second = attach(agent, DEMO_CONFIG, workflow_name=DEMO_WORKFLOW, enterprise_id="b", environ={})
    with first, pytest.raises(ValueError, match="already has a single-agent session attached"):
        second.__enter__()
    with second:  # once the first has ended, it may
        assert second.observed == 0


async def test_a_scripted_answer_into_a_closed_channel_ends_quietly(caplog, capsys) -> None:
    hub = await in_process_hub()
    human = await register_human(hub, "user")
    await registered(hub)
    # The InterviewAgent's turn hands back to the user, and is the last one.
    closing = graph(human, hub.name_to_id_map(), max_turns=2)
    ScriptedHuman(hub, human, ["too late"], delay=0.1)
    with caplog.at_level(logging.DEBUG):
        channel = await human.open(
            type=WORKFLOW_TYPE, target=["InterviewAgent"],
            knobs={"graph": closing.to_dict(), "context_vars": {}},
        )
        await human.send(channel.channel_id, "hi")
        await asyncio.sleep(0.5)  # the answer comes after the channel closed
        await hub.close()
    failed = [r for r in caplog.records if r.exc_info and "ProtocolError" in repr(r.exc_info[1])]
    assert failed == []
    assert "Traceback" not in capsys.readouterr().err
    assert any("is closed" in r.getMessage() for r in caplog.records)  # AG2 said why, once
