"""The scripted human the docs' quick start uses: an answer that meets a channel already closed
ends its part quietly (it printed AG2's ProtocolError traceback). Real AG2 1.x."""

from __future__ import annotations

import asyncio
import logging

from ag2.network import (
    WORKFLOW_TYPE,
    AgentTarget,
    FromSpeaker,
    RevertToInitiatorTarget,
    Transition,
    TransitionGraph,
)
from contextadmin_sdk.integrations.ag2.scripted import (
    ScriptedHuman,
    in_process_hub,
    register_human,
    scripted_agent,
)


async def test_an_answer_into_a_closed_channel_ends_quietly(caplog, capsys) -> None:
    hub = await in_process_hub()
    human = await register_human(hub, "user")
    agent = scripted_agent("InterviewAgent", ["Q?"])
    await hub.register(agent, attach_plugin=False)
    ids = hub.name_to_id_map()
    graph = TransitionGraph(  # the agent's turn hands back to the user, and is the last one
        initial_speaker=human.agent_id,
        transitions=[
            Transition(FromSpeaker(human.agent_id), AgentTarget(ids["InterviewAgent"])),
            Transition(FromSpeaker(ids["InterviewAgent"]), RevertToInitiatorTarget()),
        ],
        max_turns=2,
    )
    ScriptedHuman(hub, human, ["too late"], delay=0.1)
    with caplog.at_level(logging.DEBUG):
        channel = await human.open(
            type=WORKFLOW_TYPE, target=["InterviewAgent"],
            knobs={"graph": graph.to_dict(), "context_vars": {}},
        )
        await human.send(channel.channel_id, "hi")
        await asyncio.sleep(0.5)  # the answer comes after the channel closed
        await hub.close()
    failed = [r for r in caplog.records if r.exc_info and "ProtocolError" in repr(r.exc_info[1])]
    assert failed == []
    assert "Traceback" not in capsys.readouterr().err
    assert any("is closed" in r.getMessage() for r in caplog.records)  # AG2 said why, once
