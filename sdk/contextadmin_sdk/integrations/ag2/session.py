"""Attach contextadmin to AG2 1.x: a workflow channel (a ``TransitionGraph`` on a ``Hub``) or a
single ``ag2.Agent``. See docs/ag2.md and observe.py (where the adapter watches, and why)."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, Unpack

from ag2 import Agent
from ag2.events import ToolErrorEvent
from ag2.network import CHANNEL_DEP, EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope, TransitionGraph

from contextadmin_sdk.engine import Flip
from contextadmin_sdk.integrations.common import (
    ConfigArg,
    HandoffRuleError,
    RunOptions,
    open_run,
    text_of,
)

from .agent import AgentSession
from .graph import GraphCache, fired_rule, with_rules
from .internals import context_set_of, routed_by_packet, text_of_envelope
from .observe import SessionArbiter, SessionHook, SessionListener, hook_of
from .run import RunSession, result_text, runtime

__all__ = ["MARKER", "AgentSession", "HandoffRuleError", "WorkflowSession", "attach"]

MARKER = "contextadmin_session"  # the knob that tells a session its channel


class Observer(Protocol):
    """What observe.py calls on a session."""

    def watching(self, context: Any) -> bool: ...
    def turn_started(self, agent: str, context: Any) -> None: ...
    def tool_started(self, agent: str, call: Any) -> None: ...
    async def turn_ended(self, agent: str, response: Any, context: Any) -> None: ...
    async def tool_ended(self, agent: str, call: Any, result: Any, context: Any) -> None: ...
    async def envelope_posted(self, envelope: Any, metadata: Any) -> None: ...
    async def before_fold(self, envelope: Any) -> None: ...
    def channel_closed(self, reason: str) -> None: ...


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
    members = list(agents)
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


class WorkflowSession(RunSession):
    """One run of an AG2 1.x workflow channel seen by contextadmin. Made by ``attach``."""

    def __init__(
        self,
        *,
        graph: TransitionGraph,
        hub: Any,
        agents: list[Agent],
        names: dict[str, str],
        **common: Any,
    ) -> None:
        super().__init__(**common)
        self.hub = hub
        self.agents = agents
        self.participants = names
        self._names = {agent_id: name for name, agent_id in names.items()}
        self._agent_ids = {names[agent.name] for agent in agents}
        self._marker = (MARKER, uuid.uuid4().hex)
        self.graph = with_rules(graph, self.config, ids=names, skip=self._unroutable())
        self.channel_id: str | None = None
        self.close_reason: str | None = None
        self._done: asyncio.Event | None = None
        self._listener = SessionListener(self, self._marker)
        self._hooks: list[SessionHook] = []
        self._graphs = GraphCache()
        self._tools: dict[str, str] = {}  # agent -> the tool it is running (set_context's who)
        self._arbiter: SessionArbiter | None = None
        self._seen: set[int] = set()  # human texts folded before the hub folded them (ids)

    # -- what the user passes to open() ----------------------------------------------------------
    def knobs(self, **extra: Any) -> dict[str, Any]:
        """The channel's knobs: the graph with the rules, ``context_vars`` seeded with the
        run's context (over any ``context_vars`` of your own), and the session's marker."""
        seeded = {**dict(extra.pop("context_vars", None) or {}), **self.state.context}
        return {
            **extra,
            "graph": self.graph.to_dict(),
            "context_vars": copy.deepcopy(seeded),
            self._marker[0]: self._marker[1],
        }

    @property
    def context(self) -> dict[str, Any]:
        """The channel's ``context_vars`` now (the seeded values before the channel opens)."""
        if self.channel_id is not None:
            state = self.hub.adapter_state(self.channel_id)
            if state is not None:
                return dict(state.context_vars)
        return self.state.context

    async def finished(self, timeout: float | None = None) -> str:
        """Wait until the workflow's channel closes; return its close reason."""
        await asyncio.wait_for(self._event().wait(), timeout)
        return self.close_reason or ""

    # -- lifecycle -------------------------------------------------------------------------------
    def _begin(self) -> None:
        self.hub.register_listener(self._listener)
        self._arbiter = SessionArbiter(self, self.hub.arbiter)
        self.hub.register_arbiter(self._arbiter)
        for agent in self.agents:
            hook = hook_of(agent)
            hook.sessions.append(self)
            self._hooks.append(hook)

    def _finish(self, *, raised: bool) -> None:
        for hook in self._hooks:
            if self in hook.sessions:
                hook.sessions.remove(self)
        self._hooks.clear()
        self.hub.unregister_listener(self._listener)
        if self._arbiter is not None:
            self._arbiter.session = None  # another session may have wrapped it: pass through
            if self.hub.arbiter is self._arbiter:
                self.hub.register_arbiter(self._arbiter.inner)
        self._arbiter = None
        super()._finish(raised=raised)

    def _event(self) -> asyncio.Event:
        if self._done is None:
            self._done = asyncio.Event()
        return self._done

    # -- observe.py's calls ----------------------------------------------------------------------
    def watching(self, context: Any) -> bool:
        channel = context.dependencies.get(CHANNEL_DEP)
        knobs = getattr(getattr(channel, "metadata", None), "knobs", None) or {}
        return bool(knobs.get(self._marker[0]) == self._marker[1])

    def turn_started(self, agent: str, context: Any) -> None:
        self.observed += 1

    def tool_started(self, agent: str, call: Any) -> None:
        if call is None:
            self._tools.pop(agent, None)
        else:
            self._tools[agent] = call.name

    async def turn_ended(self, agent: str, response: Any, context: Any) -> None:
        flips: list[Flip] = []
        try:
            text = text_of(response.content)
            if text:
                flips = self.on_text(agent, text)
        except Exception:
            self._failed("an agent's turn")
        await self._post(context.dependencies.get(CHANNEL_DEP), flips)

    async def tool_ended(self, agent: str, call: Any, result: Any, context: Any) -> None:
        self.observed += 1
        flips: list[Flip] = []
        try:
            flips = self.on_tool(
                agent,
                call.name,
                success=not isinstance(result, ToolErrorEvent),
                text=result_text(result),
            )
        except Exception:
            self._failed("a tool's result")
        await self._post(context.dependencies.get(CHANNEL_DEP), flips)

    async def envelope_posted(self, envelope: Any, metadata: Any) -> None:
        self.observed += 1
        self.channel_id = envelope.channel_id
        flips: list[Flip] = []
        put_back: tuple[dict[str, Any], list[str]] = ({}, [])
        try:
            sender = envelope.sender_id
            if envelope.event_type == EV_TEXT and sender not in self._agent_ids:
                if id(envelope) in self._seen:  # folded before the hub folded it
                    self._seen.discard(id(envelope))
                else:  # a text the arbiter did not see (sent while the channel was unknown)
                    text = text_of_envelope(envelope)
                    if text is not None:
                        flips = self.on_text(self._name(sender), text)
                self._handoff(envelope)
            elif envelope.event_type == EV_CONTEXT_SET:
                sets, deletes = context_set_of(envelope)  # a tool's set_context, delete_context
                state = self.hub.adapter_state(envelope.channel_id)
                if state is not None and (sets or deletes):
                    name = self._name(sender)
                    self.sync(state.context_vars, agent=name, tool=self._tools.get(name))
                    put_back = self._sync.restore(state.context_vars, self.state)
            elif envelope.event_type == EV_PACKET:
                self._handoff(envelope)
        except Exception:
            self._failed("a channel envelope")
        if flips:  # a human's text flipped a flag: into context_vars from the next fold on
            await self._post_as(envelope.channel_id, envelope.sender_id, _flipped(flips))
        if put_back[0] or put_back[1]:  # the run refused what a tool set or deleted
            await self._post_as(envelope.channel_id, envelope.sender_id, *put_back)

    async def before_fold(self, envelope: Any) -> None:
        """A human's text, before the graph folds it: a flag it flips goes into
        ``context_vars`` first (agents' turns come from their middleware)."""
        flips: list[Flip] = []
        try:
            if (
                envelope.event_type != EV_TEXT
                or envelope.channel_id != self.channel_id
                or envelope.sender_id in self._agent_ids
                or not self.hub.can_send(envelope.channel_id, envelope.sender_id)
            ):
                return
            text = text_of_envelope(envelope)
            if text is None:
                return
            self.observed += 1
            self._seen.add(id(envelope))
            flips = self.on_text(self._name(envelope.sender_id), text)
        except Exception:
            self._failed("a human's text")
        if flips:
            await self._post_as(envelope.channel_id, envelope.sender_id, _flipped(flips))

    def channel_closed(self, reason: str) -> None:
        self.close_reason = reason
        self._event().set()

    # -- internals -------------------------------------------------------------------------------
    def _name(self, agent_id: str) -> str:
        return self._names.get(agent_id) or str(self.hub.name_for(agent_id, default=agent_id))

    def _handoff(self, packet: Any) -> None:
        """Report the speaker the graph chose after ``packet``, when it hands off to another
        agent (a human's turns are the conversation, not a hand-off; so is staying put)."""
        state = self.hub.adapter_state(packet.channel_id)
        target = getattr(state, "expected_next_speaker", None)
        source = packet.sender_id
        if state is None or target is None or target == source:
            return
        rule = None
        if not routed_by_packet(packet):
            rule = fired_rule(self._graphs.ordered(state.graph_data), state, packet)
        if rule is None and not (source in self._agent_ids and target in self._agent_ids):
            return
        event: dict[str, Any] = {
            "type": "handoff",
            "agent": self._name(source),
            "target": self._name(target),
        }
        if rule is not None:
            event["rule"] = rule
        self._emit(event)

    async def _post(self, channel: Any, flips: list[Flip]) -> None:
        """Write flips into the channel's context_vars before the turn's packet is posted."""
        if not flips or channel is None:
            return
        try:
            await channel.send("", event_type=EV_CONTEXT_SET, event_data={"set": _flipped(flips)})
        except Exception:
            self._failed("posting a flip to the channel")

    async def _post_as(
        self, channel_id: str, sender: str, sets: dict[str, Any], deletes: Sequence[str] = ()
    ) -> None:
        """Post an ``EV_CONTEXT_SET`` into the channel as ``sender``: a human's flips, or the
        run's values where the run refused a tool's ``set_context`` or ``delete_context``
        (deleting a name the run lacks). From the hub listener, inside the tool's own call, so
        the graph folds the turn's packet with the run's value: a refused change never routes."""
        event_data: dict[str, Any] = {"set": sets}
        if deletes:
            event_data["delete"] = list(deletes)
        envelope = Envelope(
            channel_id=channel_id,
            sender_id=sender,
            audience=None,
            event_type=EV_CONTEXT_SET,
            event_data=event_data,
        )
        try:
            await self.hub.post_envelope(envelope)
        except Exception:
            self._failed("posting the run's values to the channel")


def _flipped(flips: list[Flip]) -> dict[str, Any]:
    return {flip.name: flip.value for flip in flips}
