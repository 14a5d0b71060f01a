"""Small scripted AG2 1.x workflows for the tests (real AG2 1.x, in-process hub, no LLM)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ag2 import Agent, network
from ag2.network import ChannelInject, Hub, TransitionGraph
from ag2.network.workflow_helpers import delete_context, set_context
from contextadmin_sdk.integrations.ag2 import AgentSession, WorkflowSession, attach, scripted
from contextadmin_sdk.integrations.ag2.scripted import ToolCall

from runs.demo_chats.ag2_workflow import DEMO_CONFIG, DEMO_WORKFLOW

from .chats import INTERVIEW_DONE, TO_PLANNER

__all__ = [
    "INTERVIEW_DONE",
    "TO_PLANNER",
    "ToolCall",
    "Workflow",
    "attach_demo",
    "delete_var",
    "failing_tool",
    "record_plan",
    "set_var",
    "speakers",
    "two_stage",
]


def attach_demo(demo: Any, **options: Any) -> WorkflowSession | AgentSession:
    """Attach the 1.x demo workflow (``runs.demo_chats.ag2_workflow``) as the tests run it:
    enterprise ``acme``, an empty environment unless ``environ=`` says otherwise."""
    return attach(
        demo.graph,
        DEMO_CONFIG,
        hub=demo.hub,
        agents=demo.agents,
        workflow_name=DEMO_WORKFLOW,
        enterprise_id="acme",
        **{"environ": {}, **options},
    )


def speakers(session: Any) -> list[str]:
    """Who spoke, in order (the run's agent_text events)."""
    return [e["agent"] for e in session.events if e["type"] == "agent_text"]


@dataclass
class Workflow:
    hub: Hub
    user: Any
    agents: list[Agent]
    graph: TransitionGraph

    async def run(self, session: Any, *, opening: str = "Start.", timeout: float = 20) -> str:
        return await scripted.run_workflow(
            self.hub, self.user, self.agents, session, opening=opening, timeout=timeout
        )

    def attach_args(self) -> dict[str, Any]:
        return {"hub": self.hub, "agents": self.agents}

    def attach(self, config: Any, **options: Any) -> WorkflowSession | AgentSession:
        """Attach this workflow as the tests run it: workflow ``W``, enterprise ``e``, an
        empty environment unless ``environ=`` says otherwise."""
        return attach(
            self.graph,
            config,
            workflow_name="W",
            enterprise_id="e",
            **self.attach_args(),
            **{"environ": {}, **options},
        )


async def record_plan(names: str, channel: ChannelInject) -> str:
    """Record the plan; sets the database variable plan_owner like a real tool might."""
    await set_context(channel, "plan_owner", "tool")
    return f'{{"saved": {len(names.split(","))}}}'


async def set_var(name: str, value: str, channel: ChannelInject) -> str:
    """Set the context variable ``name`` to the JSON ``value`` (whatever the run allows)."""
    await set_context(channel, name, json.loads(value))
    return f"{name} set."


async def delete_var(name: str, channel: ChannelInject) -> str:
    """Delete the context variable ``name`` from the channel's context (``delete_context``)."""
    await delete_context(channel, name)
    return f"{name} deleted."


def failing_tool(reason: str) -> str:
    """Always fail (AG2 answers the model with a ToolErrorEvent)."""
    raise RuntimeError(reason)


async def two_stage(
    *,
    interview: list[str],
    answers: list[str],
    planner: list[Any] = (),  # type: ignore[assignment]
    tools: list[Any] = (),  # type: ignore[assignment]
    max_turns: int = 20,
) -> Workflow:
    """The user talks with InterviewAgent; Planner (with tools) and Closer wait for hand-offs."""
    hub = await scripted.in_process_hub()
    user = await scripted.register_human(hub, "user")
    interviewer = scripted.scripted_agent("InterviewAgent", interview)
    planner_agent = scripted.scripted_agent(
        "Planner", list(planner) or ["Planned."], tools=list(tools)
    )
    closer = scripted.scripted_agent("Closer", ["Closing."])
    agents = [interviewer, planner_agent, closer]
    ids = await scripted.register_agents(hub, agents)
    graph = TransitionGraph(
        initial_speaker=user.agent_id,
        transitions=[
            _edge(user.agent_id, network.AgentTarget(ids["InterviewAgent"])),
            _edge(ids["InterviewAgent"], network.RevertToInitiatorTarget()),
            _edge(ids["Planner"], network.TerminateTarget()),
            _edge(ids["Closer"], network.TerminateTarget()),
        ],
        max_turns=max_turns,
    )
    scripted.ScriptedHuman(hub, user, answers)
    return Workflow(hub, user, agents, graph)


def _edge(speaker: str, target: Any) -> network.Transition:
    """After ``speaker``, ``target`` speaks (the graph of ``two_stage``)."""
    return network.Transition(network.FromSpeaker(speaker), target)
