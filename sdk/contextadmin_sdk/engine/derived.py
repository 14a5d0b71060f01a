"""Derived variables: boolean flags flipped by observed run events (seed 000 "Derived Variable
Engine", docs/engine.md *Decisions*).

A variable flips to true when *any* of its triggers matches; a trigger matches when *all* its
predicates hold. Flips are idempotent: a flag that is already true stays true and records no
second flip. Triggers are indexed by (event type, agent-or-tool) so one event only costs the
triggers that could match it.

Adding a trigger type is one ``DerivedTrigger`` subclass plus one ``TRIGGER_LOADERS`` line (and
its model in ``contextadmin_sdk.engine.format``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from . import format as fmt
from .arguments import require_mapping
from .config import ConfigInput, load_config
from .events import event_sender
from .log import logger, preview, replaying_now

__all__ = [
    "TRIGGER_LOADERS",
    "AgentTextTrigger",
    "AgentTurnCountTrigger",
    "DerivedContextManager",
    "DerivedTrigger",
    "Flip",
    "ToolResponseTrigger",
]

CAUSE_TEXT_MAX_CHARS = 80  # the text preview kept in a flip's cause


@dataclass(frozen=True)
class Flip:
    """One derived variable set to ``value`` by trigger ``trigger_index``, and what caused it.

    ``trigger_index`` is None for an explicit set (a ``context_set`` by a tool or an agent,
    seed 000's "a tool that writes a derived variable explicitly"): ``cause`` then names who.
    """

    name: str
    value: bool
    trigger_index: int | None
    cause: dict[str, Any] = field(default_factory=dict, hash=False)

    def as_dict(self) -> dict[str, Any]:
        """Return the flip as JSON-safe data."""
        return {
            "name": self.name,
            "value": self.value,
            "trigger_index": self.trigger_index,
            "cause": dict(self.cause),
        }


class DerivedTrigger(ABC):
    """One trigger: knows the events it listens to and whether an event satisfies it."""

    event_type: ClassVar[str]  # the events it listens to
    key_field: ClassVar[str]  # the field naming the agent or tool whose events can match

    def __init_subclass__(cls, *, event_type: str, key_field: str, **kwargs: Any) -> None:
        """Each trigger names what it listens to in its class line."""
        super().__init_subclass__(**kwargs)
        cls.event_type = event_type
        cls.key_field = key_field

    @classmethod
    @abstractmethod
    def from_spec(cls, spec: Any) -> DerivedTrigger:
        """Build the trigger from its validated ``contextadmin_sdk.engine.format`` model."""

    @property
    def key(self) -> str:
        """The agent or tool whose events can match (the index key)."""
        return str(getattr(self, self.key_field))

    @abstractmethod
    def matches(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> bool:
        """Tell whether all predicates hold for this event (already known to have our key)."""

    @abstractmethod
    def cause(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> dict[str, Any]:
        """Describe the matching event in a small JSON-safe dict."""


@dataclass(frozen=True)
class AgentTextTrigger(DerivedTrigger, event_type="agent_text", key_field="agent"):
    """``agent`` emitted text equal to ``equals`` (trimmed, any case, unless ``match`` says so)."""

    agent: str
    equals: str
    case_sensitive: bool = False
    trim: bool = True

    @classmethod
    def from_spec(cls, spec: fmt.AgentTextTrigger) -> AgentTextTrigger:
        return cls(spec.agent, spec.match.equals, spec.match.case_sensitive, spec.match.trim)

    def _normal(self, text: str) -> str:
        if self.trim:
            text = text.strip()
        return text if self.case_sensitive else text.casefold()

    def matches(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> bool:
        text = event.get("text")
        return isinstance(text, str) and self._normal(text) == self._normal(self.equals)

    def cause(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> dict[str, Any]:
        text = str(event.get("text", ""))
        if len(text) > CAUSE_TEXT_MAX_CHARS:
            text = text[:CAUSE_TEXT_MAX_CHARS] + "…"
        return {"type": "agent_text", "agent": self.agent, "text": text}


@dataclass(frozen=True)
class AgentTurnCountTrigger(DerivedTrigger, event_type="agent_text", key_field="agent"):
    """``agent`` has emitted at least ``count`` agent_text messages."""

    agent: str
    count: int

    @classmethod
    def from_spec(cls, spec: fmt.AgentTurnCountTrigger) -> AgentTurnCountTrigger:
        return cls(spec.agent, spec.count)

    def matches(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> bool:
        return turn_counts.get(self.agent, 0) >= self.count

    def cause(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> dict[str, Any]:
        return {"type": "agent_text", "agent": self.agent, "turns": turn_counts.get(self.agent, 0)}


@dataclass(frozen=True)
class ToolResponseTrigger(DerivedTrigger, event_type="tool_response", key_field="tool"):
    """``tool`` responded (with ``status``, when one is configured)."""

    tool: str
    status: str | None = None

    @classmethod
    def from_spec(cls, spec: fmt.ToolResponseTrigger) -> ToolResponseTrigger:
        return cls(spec.tool, spec.status)

    def matches(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> bool:
        return self.status is None or event.get("status") == self.status

    def cause(self, event: Mapping[str, Any], *, turn_counts: Mapping[str, int]) -> dict[str, Any]:
        status = event.get("status")
        return {
            "type": "tool_response",
            "tool": self.tool,
            "status": status if isinstance(status, str) else None,
        }


TRIGGER_LOADERS: dict[str, type[DerivedTrigger]] = {
    "agent_text": AgentTextTrigger,
    "agent_turn_count": AgentTurnCountTrigger,
    "tool_response": ToolResponseTrigger,
}


def _event_key(event: Mapping[str, Any]) -> str | None:
    """The index key of an event: its sender for agent_text, its tool for tool_response."""
    if event.get("type") == "tool_response":
        tool = event.get("tool")
        return tool if isinstance(tool, str) else None
    return event_sender(event)


class DerivedContextManager:
    """Seed derived defaults and flip them from events; inert without derived variables."""

    def __init__(self, config: ConfigInput) -> None:
        derived = load_config(config).config.context_variables.derived_variables
        self._defaults: dict[str, bool] = {v.name: v.default for v in derived}
        self._index: dict[tuple[str, str], list[tuple[str, int, DerivedTrigger]]] = {}
        for variable in derived:
            for index, spec in enumerate(variable.triggers):
                trigger = TRIGGER_LOADERS[spec.type].from_spec(spec)
                bucket = self._index.setdefault((trigger.event_type, trigger.key), [])
                bucket.append((variable.name, index, trigger))
        self._turn_counts: dict[str, int] = {}

    @property
    def inert(self) -> bool:
        """True when no derived variable is declared: observing then does nothing."""
        return not self._defaults

    def defaults(self) -> dict[str, bool]:
        """Return name -> default for every derived variable, to seed a run's context."""
        return dict(self._defaults)

    def observe(
        self,
        event: Mapping[str, Any],
        values: MutableMapping[str, Any],
        *,
        turn_counts: Mapping[str, int] | None = None,
    ) -> list[Flip]:
        """Flip the variables this event triggers in ``values``; return the flips, in config order.

        ``turn_counts`` maps agent -> agent_text messages so far *including* this event; without
        it the manager keeps its own count (one manager per run).
        """
        require_mapping("event", event)
        require_mapping("values", values, mutable=True)
        return self.flips_for(event, values, turn_counts=turn_counts)

    def flips_for(
        self,
        event: Mapping[str, Any],
        values: MutableMapping[str, Any],
        *,
        turn_counts: Mapping[str, int] | None,
    ) -> list[Flip]:
        """``observe`` for a caller whose event and values are already checked (RunState, on
        every event of a chat's thread)."""
        if self.inert:
            return []
        type_ = event.get("type")
        key = _event_key(event)
        if turn_counts is None:
            if type_ == "agent_text" and key is not None:
                self._turn_counts[key] = self._turn_counts.get(key, 0) + 1
            turn_counts = self._turn_counts
        if not isinstance(type_, str) or key is None:
            return []
        flips: list[Flip] = []
        for name, index, trigger in self._index.get((type_, key), ()):
            if values.get(name) is True:
                continue  # idempotent: already true (possibly by an earlier trigger this event)
            if trigger.matches(event, turn_counts=turn_counts):
                values[name] = True
                flip = Flip(name, True, index, trigger.cause(event, turn_counts=turn_counts))
                flips.append(flip)
                if not replaying_now():  # a replayed flip happened before: logged back then
                    logger.info("derived %s flipped to true by %s", name, preview(flip.cause))
        return flips
