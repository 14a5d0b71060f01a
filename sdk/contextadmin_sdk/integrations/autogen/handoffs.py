"""A workflow's hand-off rules as AG2 Classic ``OnContextCondition`` registrations, and which
of them AG2 just fired (the rule index a ``handoff`` event names)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from autogen.agentchat.group import (
    AgentTarget,
    ContextExpression,
    ExpressionContextCondition,
    OnContextCondition,
)

__all__ = ["after_works_restore", "fired_rule", "handoff_register", "handoffs_clear"]

_REGISTERED = "_contextadmin_handoffs"  # on an agent: the conditions a session added to it
_AFTER_WORKS = "_contextadmin_after_works"  # ... of which its after-work ones, in rule order


def handoffs_clear(agents: Iterable[Any]) -> None:
    """Drop the conditions an earlier session registered on these agents (the user's stay)."""
    for agent in agents:
        previous = getattr(agent, _REGISTERED, None)
        if previous:
            ids = {id(condition) for condition in previous}
            handoffs = agent.handoffs
            handoffs.context_conditions = [
                c for c in handoffs.context_conditions if id(c) not in ids
            ]
            handoffs.after_works = [c for c in handoffs.after_works if id(c) not in ids]
        setattr(agent, _REGISTERED, [])
        setattr(agent, _AFTER_WORKS, [])


def after_works_restore(agents: Iterable[Any]) -> None:
    """Put back the after-work rules a session registered that the pattern dropped as the chat
    started: ``RoundRobinPattern`` and ``RandomPattern`` call ``set_after_work`` on every agent
    in ``prepare_group_chat``, which would leave each rule to fire a whole round late (when its
    source is picked again), not on the turn right after the flip."""
    for agent in agents:
        present = {id(condition) for condition in agent.handoffs.after_works}
        for condition in getattr(agent, _AFTER_WORKS, None) or []:
            if id(condition) not in present:
                agent.handoffs.add_after_work(condition)  # before the unconditional one


def handoff_register(
    source: Any, target: Any, expression: ContextExpression, *, index: int, rule_of: dict[int, int]
) -> None:
    """Register rule ``index`` as an OnContextCondition on its source agent, twice.

    - ``handoffs.add_after_work``: AG2 evaluates after-work conditions as soon as the source
      agent's turn ends, so the turn that flips the flag is followed directly by the target
      (no transit message). ``add_after_work`` keeps the agent's unconditional after-work
      (``set_after_work``) last, so ours are tried first.
    - ``handoffs.add_context_condition``: AG2 evaluates these when the source agent is about
      to speak, before its reply. That covers flips made elsewhere: a tool's response (AG2
      returns to the caller, which then hands off at once) or another agent's turn.

    Either way the chat routes on the turn right after the flip. ``rule_of`` learns each
    condition's rule index (by ``id``).
    """
    handoffs = source.handoffs
    adds = ((handoffs.add_after_work, True), (handoffs.add_context_condition, False))
    for add, after_work in adds:
        condition = OnContextCondition(
            target=AgentTarget(target), condition=ExpressionContextCondition(expression)
        )
        add(condition)
        rule_of[id(condition)] = index
        getattr(source, _REGISTERED).append(condition)
        if after_work:
            getattr(source, _AFTER_WORKS).append(condition)


def fired_rule(
    agent: Any, conditions: Iterable[Any], rule_of: dict[int, int], *, target: str
) -> int | None:
    """The index of our rule among the conditions AG2 just fired (handing the floor to
    ``target``), replaying its first-match; None when another condition decided.

    A condition of the team's own with ``available`` is skipped (AG2 judged it with the
    messages), so the first of ours that holds may not be the one AG2 fired: one that hands to
    another agent than ``target`` did not fire (that hand-off was the team's own condition's)."""
    for condition in conditions:
        if condition.available is not None:
            continue  # ours never have one; AG2 judged the user's own with the messages
        try:
            holds = condition.condition is None or condition.condition.evaluate(
                agent.context_variables
            )
        except Exception:
            holds = False
        if holds:
            fired = getattr(condition.target, "agent_name", None) == target
            return rule_of.get(id(condition)) if fired else None
    return None
