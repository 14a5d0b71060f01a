"""The demo workflow on AG2 1.x: the Generator's agents on a workflow channel (no LLM).

It follows the ``GeneratorChat`` workflow (contextadmin/demo/ag2_context_variables.json), as the
Classic demo does (runs/demo_chats/autogen_chat.py): the user (a human participant, the
initiator) answers the InterviewAgent until it says NEXT (``interview_complete``, hand-off 0),
the ContextVariablesAgent calls the ``save_context_plan`` tool (``context_saved`` on its
result, hand-off 1), the HandoffsAgent speaks twice with the user's review between
(``handoffs_reviewed``, an ``agent_turn_count`` trigger) and the workflow ends. Both runs have
the same flips and the same hand-off path. (AG2 1.2's ``StayTarget`` never wakes an agent
again: a channel does not deliver a packet to its own sender, hence the user's review.)
Used by ``manage.py demo_ag2``, the tests, the benchmark and docs/ag2.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from ag2 import Agent
from ag2.network import (
    AgentTarget,
    ContextEquals,
    FromSpeaker,
    Hub,
    RevertToInitiatorTarget,
    TerminateTarget,
    Transition,
    TransitionGraph,
    register_condition,
)
from contextadmin_sdk.integrations.ag2.scripted import (
    ScriptedHuman,
    ToolCall,
    in_process_hub,
    register_agents,
    register_human,
    run_workflow,
    scripted_agent,
)

from runs.demo_chats import generator
from runs.demo_chats.generator import DEMO_CONFIG, DEMO_WORKFLOW, OPENING

__all__ = [
    "DEMO_CONFIG",
    "DEMO_WORKFLOW",
    "OPENING",
    "DemoWorkflow",
    "demo_workflow",
    "run_demo",
    "save_context_plan",
]

ANSWERS = [*generator.USER_ANSWERS, "Looks right."]  # the last: once the plan is saved


@dataclass(slots=True)
class FromSpeakerOnceSet:
    """The packet is from ``agent_id`` and ``context_vars[key]`` is set (a demo condition:
    the user's answer goes back to the HandoffsAgent once the plan is saved)."""

    agent_id: str
    key: str
    name: ClassVar[str] = "contextadmin.demo.from_speaker_once_set"

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return envelope.sender_id == self.agent_id and bool(state.context_vars.get(self.key))


register_condition(FromSpeakerOnceSet)


def save_context_plan(names: str) -> str:
    """Save the planned context variables (comma-separated names); the demo counts them."""
    saved = [name for name in names.split(",") if name]
    return json.dumps({"saved": len(saved), "names": saved})


@dataclass
class DemoWorkflow:
    """The demo's hub, its human initiator, its agents and its graph (attach to the graph)."""

    hub: Hub
    user: Any
    agents: list[Agent]
    graph: TransitionGraph
    human: ScriptedHuman


async def demo_workflow(
    *, delay: float = 0.0, answers: list[str] | None = None, store: Any = None
) -> DemoWorkflow:
    """Build the demo: an in-process hub (on ``store``), the user, the three agents and the
    graph. ``answers`` replaces the user's scripted answers (a resumed run needs only the last).
    """
    hub = await in_process_hub(store)
    user = await register_human(hub, "user")
    interview = scripted_agent("InterviewAgent", list(generator.INTERVIEW_LINES), delay=delay)
    planner = scripted_agent(
        "ContextVariablesAgent",
        [ToolCall("save_context_plan", names=generator.PLANNED), generator.PLANNER_REPLY],
        tools=[save_context_plan],
        delay=delay,
    )
    designer = scripted_agent("HandoffsAgent", list(generator.HANDOFFS_LINES), delay=delay)
    agents = [interview, planner, designer]
    ids = await register_agents(hub, agents)
    graph = TransitionGraph(
        initial_speaker=user.agent_id,
        transitions=[
            Transition(
                FromSpeakerOnceSet(user.agent_id, "context_saved"),
                AgentTarget(ids["HandoffsAgent"]),
            ),
            Transition(FromSpeaker(user.agent_id), AgentTarget(ids["InterviewAgent"])),
            Transition(FromSpeaker(ids["InterviewAgent"]), RevertToInitiatorTarget()),
            Transition(FromSpeaker(ids["ContextVariablesAgent"]), TerminateTarget()),
            Transition(ContextEquals("handoffs_reviewed", True), TerminateTarget("reviewed")),
            Transition(FromSpeaker(ids["HandoffsAgent"]), RevertToInitiatorTarget()),
        ],
        max_turns=40,
    )
    human = ScriptedHuman(hub, user, ANSWERS if answers is None else answers, delay=delay)
    return DemoWorkflow(hub, user, agents, graph, human)


async def run_demo(
    demo: DemoWorkflow, session: Any, *, opening: str = OPENING, timeout: float = 60
) -> str:
    """Run the demo workflow under ``session`` (opened with its knobs); return the close
    reason."""
    return await run_workflow(
        demo.hub, demo.user, demo.agents, session, opening=opening, timeout=timeout
    )
