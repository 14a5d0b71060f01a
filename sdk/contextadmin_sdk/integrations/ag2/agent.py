"""A single ``ag2.Agent`` run (no network, no hand-offs) under contextadmin."""

from __future__ import annotations

import copy
from typing import Any

from ag2 import Agent
from ag2.events import ToolErrorEvent
from ag2.network import CHANNEL_DEP

from contextadmin_sdk.engine import Flip
from contextadmin_sdk.integrations.common import text_of

from .observe import SessionHook, hook_of
from .run import RunSession, result_text

__all__ = ["AgentSession"]


class AgentSession(RunSession):
    """One run of a single ``ag2.Agent`` (no network, no hand-offs). Made by ``attach``.

    The run's context is written into each turn's ``Context.variables`` (what a tool reads
    with ``Variable()`` and writes through ``Context``); flips land there during the turn.
    """

    def __init__(self, *, agent: Agent, **common: Any) -> None:
        super().__init__(**common)
        self.agent = agent
        self.variables: dict[str, Any] = copy.deepcopy(self.state.context)
        self._hook: SessionHook | None = None
        for index, rule in enumerate(self.config.handoffs):
            self.skipped_handoffs.append(
                {"index": index, "condition": rule.condition, "reason": "a single agent"}
            )

    @property
    def context(self) -> dict[str, Any]:
        """The run's variables as the agent's turns left them."""
        return self.variables

    def _begin(self) -> None:
        hook = hook_of(self.agent)
        if any(isinstance(each, AgentSession) for each in hook.sessions):
            # Its turns carry no channel to tell two runs apart: one at a time.
            raise ValueError(
                f"agent {self.agent.name!r} already has a single-agent session attached: leave "
                "its `with` block before attaching another (a workflow channel's runs may "
                "overlap; an agent's own runs may not)"
            )
        hook.sessions.append(self)
        self._hook = hook

    def _finish(self, *, raised: bool) -> None:
        if self._hook is not None and self in self._hook.sessions:
            self._hook.sessions.remove(self)
        super()._finish(raised=raised)

    def watching(self, context: Any) -> bool:
        return context.dependencies.get(CHANNEL_DEP) is None

    def tool_started(self, agent: str, call: Any) -> None:
        return None

    def turn_started(self, agent: str, context: Any) -> None:
        """Seed the turn with the run's variables; what the caller gave the turn for a declared
        one (``ask(..., variables=...)``, ``Agent(variables=...)``) is a change like a tool's:
        a ``context_set`` (a flag set to a boolean is a flip) or a ``warning``, never dropped
        silently."""
        self.observed += 1
        try:
            given = {n: v for n, v in context.variables.items() if n in self._sync.names}
            if given:
                self.sync({**self.variables, **given}, agent=agent)
                self.variables.update(copy.deepcopy(self.state.context))
            context.variables.update(copy.deepcopy(self.variables))
            if given:
                self._put_back(context)  # a name the run lacks (production) goes too
        except Exception:
            self._failed("seeding a turn's variables")

    async def turn_ended(self, agent: str, response: Any, context: Any) -> None:
        try:
            self._settle(context, self.sync(dict(context.variables), agent=agent))
            self._put_back(context)
            text = text_of(response.content)
            if text:
                self._settle(context, self.on_text(agent, text))
            self.variables.update(
                {n: copy.deepcopy(v) for n, v in context.variables.items() if n in self._declared}
            )
        except Exception:
            self._failed("an agent's turn")

    async def tool_ended(self, agent: str, call: Any, result: Any, context: Any) -> None:
        self.observed += 1
        try:
            self._settle(context, self.sync(dict(context.variables), agent=agent, tool=call.name))
            self._put_back(context)
            flips = self.on_tool(
                agent,
                call.name,
                success=not isinstance(result, ToolErrorEvent),
                text=result_text(result),
            )
            self._settle(context, flips)
        except Exception:
            self._failed("a tool's result")

    async def envelope_posted(self, envelope: Any, metadata: Any) -> None:  # pragma: no cover
        return None

    async def before_fold(self, envelope: Any) -> None:  # pragma: no cover - no hub
        return None

    def folded(self, envelope: Any, state: Any) -> None:  # pragma: no cover - no hub
        return None

    def channel_closed(self, reason: str) -> None:  # pragma: no cover
        return None

    def _put_back(self, context: Any) -> None:
        """The run's value back into the turn's variables where the run refused a change (the
        warning says what): the agent and ``session.context`` hold what the run holds."""
        sets, deletes = self._sync.restore(dict(context.variables), self.state)
        for name in deletes:
            context.variables.pop(name, None)
            self.variables.pop(name, None)
        for name, value in sets.items():
            context.variables[name] = value
            self.variables[name] = copy.deepcopy(value)

    def _settle(self, context: Any, flips: list[Flip]) -> None:
        for flip in flips:
            context.variables[flip.name] = flip.value
            self.variables[flip.name] = flip.value
