"""One run of an AG2 1.x workflow channel (a ``TransitionGraph`` on a ``Hub``), made by
``attach`` (entry.py). See docs/ag2.md and observe.py (where the adapter watches, and why)."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from ag2 import Agent
from ag2.events import ToolErrorEvent
from ag2.network import CHANNEL_DEP, EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope, TransitionGraph

from contextadmin_sdk.engine import Flip
from contextadmin_sdk.integrations.common import HandoffRuleError, text_of

from .agent import AgentSession
from .graph import GraphCache, fired_rule, with_rules
from .internals import context_set_of, routed_by_packet, text_of_envelope
from .observe import (
    SessionArbiter,
    SessionHook,
    SessionListener,
    SessionTap,
    hook_of,
    unwrap,
)
from .run import RunSession, result_text

__all__ = ["MARKER", "AgentSession", "HandoffRuleError", "Observer", "WorkflowSession"]

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
    def folded(self, envelope: Any, state: Any) -> None: ...
    def channel_closed(self, reason: str) -> None: ...


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
        self._tap: SessionTap | None = None
        self._seen: set[int] = set()  # human texts folded before the hub folded them (ids)
        self._routed: set[str] = set()  # envelopes whose hand-off the tap reported (ids)

    # -- what the user passes to open() ----------------------------------------------------------
    def knobs(self, **extra: Any) -> dict[str, Any]:
        """The channel's knobs: the graph with the rules, ``context_vars`` seeded with the
        run's context (over any ``context_vars`` of your own), and the session's marker.

        One session observes one channel: asked again in its ``with`` block once its channel
        opened, a ``ValueError`` (another channel's turns would go unobserved, or into this
        run); attach again for another run. After the block, the knobs are a plain read."""
        if self.channel_id is not None and self._arbiter is not None:
            raise ValueError(
                f"session.knobs(): this session's channel {self.channel_id} is open already; a "
                "session observes one workflow channel (one run): attach() again, a new "
                "session, for another channel"
            )
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
            self._arbiter.session = None  # a pass-through, until it leaves the chain
            outermost = self.hub.arbiter
            restored = unwrap(outermost, self._arbiter)
            if restored is not outermost:
                self.hub.register_arbiter(restored)
        self._arbiter = None
        self._untap()
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
        if self._tap is None:  # the channel's first envelope (its invite): before any turn
            self._tap_adapter(envelope.channel_id)
        flips: list[Flip] = []
        put_back: tuple[dict[str, Any], list[str]] = ({}, [])
        try:
            sender = envelope.sender_id
            if envelope.event_type == EV_TEXT:  # a human's, or an agent's own send
                if id(envelope) in self._seen:  # folded before the hub folded it
                    self._seen.discard(id(envelope))
                else:  # a text the arbiter did not see (sent while the channel was unknown)
                    text = text_of_envelope(envelope)
                    if text is not None:
                        flips = self.on_text(self._name(sender), text)
                self._handoff_late(envelope)
            elif envelope.event_type == EV_CONTEXT_SET:
                sets, deletes = context_set_of(envelope)  # a tool's set_context, delete_context
                state = self.hub.adapter_state(envelope.channel_id)
                if state is not None and (sets or deletes):
                    name = self._name(sender)
                    self.sync(state.context_vars, agent=name, tool=self._tools.get(name))
                    put_back = self._sync.restore(state.context_vars, self.state)
            elif envelope.event_type == EV_PACKET:
                self._handoff_late(envelope)
        except Exception:
            self._failed("a channel envelope")
        if flips:  # a human's text flipped a flag: into context_vars from the next fold on
            await self._post_as(envelope.channel_id, envelope.sender_id, _flipped(flips))
        if put_back[0] or put_back[1]:  # the run refused what a tool set or deleted
            await self._post_as(envelope.channel_id, envelope.sender_id, *put_back)

    async def before_fold(self, envelope: Any) -> None:
        """A participant's own text (a human's, or an agent's sent through its client, such
        as the message an agent opens the workflow with), before the graph folds it: a flag it
        flips goes into ``context_vars`` first. Agents' model turns are packets, seen by their
        middleware."""
        flips: list[Flip] = []
        try:
            if (
                envelope.event_type != EV_TEXT
                or envelope.channel_id != self.channel_id
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

    def folded(self, envelope: Any, state: Any) -> None:
        """A substantive envelope of the channel folded to ``state`` (inside the hub's fold):
        report the hand-off the graph chose on exactly that state."""
        try:
            if envelope.channel_id != self.channel_id or envelope.event_type not in (
                EV_TEXT,
                EV_PACKET,
            ):
                return
            self._routed.add(envelope.envelope_id)
            self._handoff(envelope, state)
        except Exception:
            self._failed("the graph's routing")

    def channel_closed(self, reason: str) -> None:
        self.close_reason = reason
        self._event().set()

    # -- internals -------------------------------------------------------------------------------
    def _name(self, agent_id: str) -> str:
        return self._names.get(agent_id) or str(self.hub.name_for(agent_id, default=agent_id))

    def _tap_adapter(self, channel_id: str) -> None:
        """Wrap the adapter the channel runs on (``Hub.register_adapter``), so each fold's
        state reaches ``folded``; any failure leaves the listener's late reading."""
        try:
            inner = self.hub.adapter_for(channel_id)
            self._tap = SessionTap(self, inner)
            self.hub.register_adapter(self._tap)
        except Exception:
            self._failed("the channel's adapter")

    def _untap(self) -> None:
        tap, self._tap = self._tap, None
        if tap is None:
            return
        tap.session = None  # a pass-through, until it leaves the chain
        if self.channel_id is None:  # pragma: no cover - a tap is made for a known channel
            return
        try:
            outermost = self.hub.adapter_for(self.channel_id)
            restored = unwrap(outermost, tap)
            if restored is not outermost:
                self.hub.register_adapter(restored)
        except Exception:
            self._failed("restoring the channel's adapter")

    def _handoff_late(self, packet: Any) -> None:
        """The listener's reading, for a fold the tap did not see (its adapter replaced)."""
        if packet.envelope_id in self._routed:
            self._routed.discard(packet.envelope_id)
        else:
            self._handoff(packet, self.hub.adapter_state(packet.channel_id))

    def _handoff(self, packet: Any, state: Any) -> None:
        """Report the speaker the graph chose after ``packet`` (folded to ``state``), when it
        hands off to another agent (a human's turns are the conversation, not a hand-off; so
        is staying put)."""
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
