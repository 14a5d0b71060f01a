"""The workflow's hand-off rules as transitions of an AG2 1.x ``TransitionGraph``.

Each rule ``{"source_agent", "target_agent", "condition"}`` becomes
``Transition(when=ContextRule(...), then=AgentTarget(target_id))``. ``ContextRule`` is a
registered condition type (``register_condition``), a dataclass of plain data, so the graph
stays data: it survives ``TransitionGraph.to_dict()`` / ``loads()`` and therefore a hub restore
(``Hub.hydrate`` re-folds the WAL with the graph from the channel's knobs).

``ContextRule`` holds when the packet being folded was sent by the rule's source agent and the
rule's ``${a}`` / ``${a} and ${b}`` holds over the channel's ``context_vars``. A name absent from
``context_vars`` (an environment variable in production) makes it false; it never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ag2.network import (
    AgentTarget,
    Transition,
    TransitionGraph,
    register_condition,
)

from contextadmin_sdk.engine import ConditionError, evaluate_condition
from contextadmin_sdk.engine.format import ContextVariablesFile

from .internals import transition_order

__all__ = ["RULE_CONDITION", "ContextRule", "GraphCache", "fired_rule", "with_rules"]

RULE_CONDITION = "contextadmin.handoff_rule"


@dataclass(slots=True)
class ContextRule:
    """A contextadmin hand-off rule: ``source`` (an agent id) spoke and ``condition`` holds."""

    source: str
    condition: str
    rule: int
    name: ClassVar[str] = RULE_CONDITION

    def evaluate(self, state: Any, envelope: Any) -> bool:
        if envelope.sender_id != self.source:
            return False
        try:
            return evaluate_condition(self.condition, state.context_vars)
        except (ConditionError, AttributeError, TypeError):
            return False


register_condition(ContextRule)


def with_rules(
    graph: TransitionGraph,
    config: ContextVariablesFile,
    *,
    ids: dict[str, str],
    skip: set[int],
) -> TransitionGraph:
    """A copy of ``graph`` with each rule (but those in ``skip``) ahead of its own transitions.

    The rules come first and with a priority below every existing one, so they are tried first,
    in config order, as Classic tries the adapter's conditions before the agent's own after-work.
    A graph already carrying rules (attached before) has them replaced.
    """
    own = [t for t in graph.transitions if not isinstance(t.when, ContextRule)]
    first = min([t.priority for t in own], default=0) - 1
    rules = [
        Transition(
            when=ContextRule(source=ids[rule.source_agent], condition=rule.condition, rule=index),
            then=AgentTarget(ids[rule.target_agent]),
            priority=first,
        )
        for index, rule in enumerate(config.handoffs)
        if index not in skip
    ]
    return TransitionGraph(
        initial_speaker=graph.initial_speaker,
        transitions=[*rules, *own],
        default_target=graph.default_target,
        max_turns=graph.max_turns,
    )


def fired_rule(transitions: list[Transition], state: Any, envelope: Any) -> int | None:
    """The index of our rule that routed this envelope, replaying the adapter's first match
    over the folded state (``transitions`` in ``transition_order``); None when another
    transition (or none) decided."""
    for transition in transitions:
        try:
            holds = transition.when.evaluate(state, envelope)
        except Exception:
            holds = False
        if holds:
            return transition.when.rule if isinstance(transition.when, ContextRule) else None
    return None


class GraphCache:
    """A channel's graph, loaded once from the ``graph_data`` its folded states carry (the
    adapter hands the same dict from state to state), its transitions in trial order."""

    def __init__(self) -> None:
        self._data: dict[str, Any] | None = None
        self._ordered: list[Transition] = []

    def ordered(self, graph_data: dict[str, Any]) -> list[Transition]:
        if graph_data is not self._data:
            self._ordered = transition_order(TransitionGraph.loads(graph_data).transitions)
            self._data = graph_data
        return self._ordered
