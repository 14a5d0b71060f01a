"""LLM-free AG2 1.x participants for tests, the demo and the benchmark: real AG2, scripted turns.

- ``ScriptedConfig(*turns)``: ``ag2.testing.TestConfig`` whose one client is reused across
  turns. ``Agent`` calls ``config.create()`` on every ``ask``, and a fresh ``TestConfig`` client
  restarts the script, so every turn would replay its first line. After the script, each turn
  says ``after``.
- ``scripted_agent(name, turns, tools=...)``: an ``ag2.Agent`` on a ``ScriptedConfig``; a turn is
  a text or a ``ToolCall`` (AG2 runs the tool, then the script is read on for the turn's text).
- ``ScriptedHuman``: a registered human participant that answers from a list whenever the
  workflow expects it to speak.
- ``in_process_hub()`` and ``open_workflow(...)``: an in-process ``Hub`` (memory store, no
  sweepers) and a workflow channel opened and active.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import (
    EV_PACKET,
    EV_TEXT,
    WORKFLOW_TYPE,
    ChannelState,
    Hub,
    HubClient,
    InboxBlock,
    LimitsBlock,
    LocalLink,
    Passport,
    ProtocolError,
    Rule,
)
from ag2.testing import TestConfig

from contextadmin_sdk.integrations.common import ToolCall

__all__ = [
    "ScriptedConfig",
    "ScriptedHuman",
    "ToolCall",
    "in_process_hub",
    "open_workflow",
    "register_agents",
    "register_human",
    "run_workflow",
    "scripted_agent",
]


def _tool_call_event(call: ToolCall) -> ToolCallEvent:
    call_id, arguments = call.call()
    return ToolCallEvent(name=call.tool, arguments=arguments, id=call_id)


class _Paced:
    """The scripted client, waiting ``delay`` seconds before each reply (the demo's pace)."""

    def __init__(self, client: Any, delay: float) -> None:
        self.client = client
        self.delay = delay

    async def __call__(self, messages: Any, context: Any, **kwargs: Any) -> Any:
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        return await self.client(messages, context, **kwargs)


class ScriptedConfig(TestConfig):
    """``TestConfig`` with one client for every turn (see the module docstring)."""

    __test__ = False

    def __init__(self, *turns: Any, after: str = "Done.", delay: float = 0.0) -> None:
        script = [_tool_call_event(t) if isinstance(t, ToolCall) else t for t in turns]
        super().__init__(*script, *itertools.repeat(after, 10_000), raise_tool_errors=False)
        self._delay = delay
        self._client: Any = None

    def create(self) -> Any:
        if self._client is None:
            client = super().create()
            self._client = _Paced(client, self._delay) if self._delay > 0 else client
        return self._client


def scripted_agent(
    name: str,
    turns: Iterable[str | ToolCall],
    *,
    tools: Sequence[Callable[..., Any]] = (),
    after: str = "Done.",
    delay: float = 0.0,
    **agent_options: Any,
) -> Agent:
    """An ``ag2.Agent`` whose model replies with ``turns`` in order, then ``after``."""
    config = ScriptedConfig(*turns, after=after, delay=delay)
    return Agent(name, config=config, tools=list(tools), **agent_options)


async def in_process_hub(store: Any = None) -> Hub:
    """A hub in this process on ``store`` (default: a new memory store), no sweepers."""
    return await Hub.open(
        store if store is not None else MemoryKnowledgeStore(),
        expectation_sweep_interval=0,
        ttl_sweep_interval=0,
    )


async def register_agents(hub: Hub, agents: Iterable[Agent]) -> dict[str, str]:
    """Register ``agents`` on an in-process hub (without the hub's plugin, which a scripted
    agent does not use) and return every participant's id by name, the graph's targets."""
    for agent in agents:
        await hub.register(agent, attach_plugin=False)
    return hub.name_to_id_map()


async def register_human(hub: Hub, name: str = "user", *, inbox: int = 1000) -> Any:
    """Register a human participant (the workflow's initiator) on an in-process hub.

    ``inbox``: how many envelopes may wait for it (AG2 counts every envelope dispatched to a
    participant until it posts again: a long workflow whose human opened it and stays silent
    needs more than AG2's default 1,000).
    """
    rule = Rule(limits=LimitsBlock(inbox=InboxBlock(max_pending=inbox)))
    client = HubClient(LocalLink(hub), hub=hub)
    return await client.register_human(Passport(name=name), rule=rule)


async def open_workflow(
    hub: Hub, human: Any, *, agents: Iterable[Agent], knobs: dict[str, Any], timeout: float = 10
) -> Any:
    """Open a workflow channel as ``human`` and wait until every agent accepted it."""
    channel = await human.open(
        type=WORKFLOW_TYPE, target=[agent.name for agent in agents], knobs=knobs
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (await hub.get_channel(channel.channel_id)).state != ChannelState.ACTIVE:
        if loop.time() > deadline:
            raise TimeoutError(f"channel {channel.channel_id} did not become active")
        await asyncio.sleep(0.005)
    return channel


class ScriptedHuman:
    """Answers from ``answers`` (then ``after``) each time the workflow expects ``human``."""

    def __init__(
        self,
        hub: Hub,
        human: Any,
        answers: Iterable[str],
        *,
        after: str = "Done.",
        delay: float = 0.0,
    ) -> None:
        self.hub = hub
        self.human = human
        self.answers = deque(answers)
        self.after = after
        self.delay = delay
        human.on_envelope(self._on_envelope)

    async def _on_envelope(self, envelope: Any) -> None:
        if envelope.event_type not in (EV_PACKET, EV_TEXT):
            return
        state = self.hub.adapter_state(envelope.channel_id)
        if getattr(state, "expected_next_speaker", None) != self.human.agent_id:
            return
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        answer = self.answers.popleft() if self.answers else self.after
        try:
            await self.human.send(envelope.channel_id, answer)
        except ProtocolError:  # the channel closed while it answered: the conversation is over
            return


async def run_workflow(
    hub: Hub,
    human: Any,
    agents: Iterable[Agent],
    session: Any,
    *,
    opening: str,
    timeout: float = 60,
) -> str:
    """Open the workflow channel with ``session.knobs()``, say ``opening`` as ``human`` and wait
    until the channel closes; return its close reason."""
    channel = await open_workflow(hub, human, agents=agents, knobs=session.knobs())
    await human.send(channel.channel_id, opening)
    reason: str = await session.finished(timeout)
    return reason
