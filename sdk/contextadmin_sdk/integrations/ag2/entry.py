"""``attach``: contextadmin on AG2 1.x, a workflow channel (a ``TransitionGraph`` on a ``Hub``)
or a single ``ag2.Agent``; what it checks before a run starts. See docs/ag2.md."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Unpack

from ag2 import Agent
from ag2.network import TransitionGraph

from contextadmin_sdk.integrations.common import ConfigArg, RunOptions, open_run

from .agent import AgentSession
from .run import runtime
from .session import WorkflowSession

__all__ = ["attach"]


def attach(
    workflow: TransitionGraph | Agent,
    config: ConfigArg,
    *,
    hub: Any = None,
    agents: Iterable[Agent] = (),
    **options: Unpack[RunOptions],
) -> WorkflowSession | AgentSession:
    """Seed, route and report an AG2 1.x run; return the session whose ``with`` block observes it.

    - ``workflow`` a ``TransitionGraph`` (with ``hub=`` and the workflow's ``agents=``, all
      registered on the hub): attach before opening the channel, and open it with
      ``knobs=session.knobs()``: the graph with the workflow's hand-off rules, and
      ``context_vars`` seeded with the run's context.
    - ``workflow`` an ``ag2.Agent``: a single agent's run (tools, variables, flags; no hand-offs).

    ``options`` (``workflow_name`` and ``enterprise_id`` required; ``environ``, ``mongo``,
    ``reporter``, ``run_id``, ``spool_dir``, ``capacity``, ``flush_timeout``) are
    ``contextadmin_sdk.integrations.common.RunOptions``: ``run_id`` (with a ``reporter``)
    resumes that run from the server's state and the spool.
    """
    if not isinstance(workflow, TransitionGraph | Agent):
        raise TypeError(_wrong_kind(workflow))
    if isinstance(workflow, Agent) and (hub is not None or agents):
        raise TypeError(
            "attach(agent, ...) observes a single ag2.Agent's own turns: hub= and agents= "
            "are for a workflow channel, attach(graph, config, hub=..., agents=[...])"
        )
    members = _members(agents)
    names: dict[str, str] | None = None
    if isinstance(workflow, TransitionGraph):
        if hub is None or not hasattr(hub, "register_listener"):
            raise TypeError(
                "attach(graph, ...) needs hub=: the ag2.network.Hub the workflow runs on, in this "
                f"process (got {type(hub).__name__})"
            )
        names = _participants(hub, workflow, members)
    opened = open_run(config, agents=names, where="the channel", runtime=runtime(), options=options)
    if isinstance(workflow, Agent) or names is None:
        assert isinstance(workflow, Agent)  # names are the channel's: none for a single agent
        return AgentSession(agent=workflow, opened=opened)
    return WorkflowSession(graph=workflow, hub=hub, agents=members, names=names, opened=opened)


def _wrong_kind(workflow: Any) -> str:
    module = type(workflow).__module__
    if module == "autogen" or module.startswith("autogen."):
        return (
            f"attach() got an AG2 Classic {type(workflow).__name__}: "
            "contextadmin_sdk.integrations.ag2 "
            "attaches to AG2 1.x (a TransitionGraph with hub= and agents=, or an ag2.Agent); use "
            "contextadmin_sdk.integrations.autogen.attach for Classic group chats"
        )
    return (
        "attach() takes an AG2 1.x TransitionGraph (with hub= and agents=) or an ag2.Agent, got "
        f"{type(workflow).__name__}"
    )


def _members(agents: Any) -> list[Agent]:
    """``agents=`` as a list of ``ag2.Agent``: anything else is a ``TypeError`` saying what
    it must be (not an AttributeError from inside)."""
    if isinstance(agents, Agent | str | bytes) or not isinstance(agents, Iterable):
        raise TypeError(
            "attach() agents=: must be a list of the workflow's ag2.Agent objects, "
            f"not {type(agents).__name__}"
        )
    members = list(agents)
    for member in members:
        if not isinstance(member, Agent):
            raise TypeError(
                "attach() agents=: must be the ag2.Agent objects registered on the hub, "
                f"got {type(member).__name__} {str(member)[:60]!r}"
            )
    return members


def _participants(hub: Any, graph: TransitionGraph, agents: list[Agent]) -> dict[str, str]:
    """name -> agent id of the channel's participants: the agents and the initial speaker."""
    names: dict[str, str] = {}
    for agent in agents:
        agent_id = hub.find_agent_id(agent.name)
        if agent_id is None:
            raise ValueError(f"agent {agent.name!r} is not registered on the hub: register first")
        names[agent.name] = agent_id
    opener = hub.name_for(graph.initial_speaker, default=graph.initial_speaker)
    names.setdefault(opener, graph.initial_speaker)
    return names
