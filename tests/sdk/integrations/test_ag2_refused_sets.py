"""A tool's ``set_context`` (or ``delete_context`` of a declared variable) that the run refuses,
on real AG2 1.x workflow channels: the warning is reported and the run's value goes back into
``context_vars`` before the graph folds the turn's packet, so no rule routes on a value the
inspector does not show."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag2.network import AgentTarget, ContextEquals, FromSpeaker, Transition

from .chats import config, derived, env_flag
from .workflows import ToolCall, delete_var, set_var, speakers, two_stage

SAVED = derived("context_saved")  # no trigger: only a tool sets it
MONETIZATION = env_flag("monetization_enabled", "MONETIZATION_ENABLED")
TO_CLOSER = {"source_agent": "Planner", "target_agent": "Closer", "condition": "${context_saved}"}
MONETIZED = {**TO_CLOSER, "condition": "${monetization_enabled}"}
CONSTANT = {"name": "max_items", "type": "integer", "value": 25}
PRODUCTION = {"ENVIRONMENT": "production"}


async def planner_sets(*sets: tuple[str, Any]) -> Any:
    """InterviewAgent hands to Planner, whose tool sets ``sets``; Planner's own transition
    ends the workflow, so Closer speaks only when a rule routes to it."""
    return await planner_calls(
        *[ToolCall("set_var", name=name, value=json.dumps(value)) for name, value in sets]
    )


async def planner_calls(*calls: ToolCall) -> Any:
    """The same workflow, Planner making ``calls`` (``set_var``, ``delete_var``) in one turn."""
    workflow = await two_stage(
        interview=["Question?"],
        answers=[],
        planner=[*calls, "Planned."],
        tools=[set_var, delete_var],
    )
    ids = workflow.hub.name_to_id_map()
    workflow.graph.transitions.insert(
        0, Transition(FromSpeaker(ids["InterviewAgent"]), AgentTarget(ids["Planner"]))
    )
    return workflow


@pytest.mark.parametrize(
    ("name", "value", "rule", "environ", "restored"),
    [
        pytest.param("context_saved", "yes", TO_CLOSER, {}, False, id="derived-flag-not-boolean"),
        pytest.param(
            "monetization_enabled", "yes", MONETIZED, {}, False, id="environment-wrong-type"
        ),
        # In production the rule is never added, but the graph's own ContextEquals transition
        # below would fire on every packet (Closer -> Closer ... until AG2's inbox fills).
        pytest.param(
            "monetization_enabled", True, MONETIZED, PRODUCTION, None,
            id="environment-in-production",
        ),
    ],
)
async def test_a_refused_set_context_is_put_back_before_the_graph_routes_on_it(
    name: str, value: Any, rule: dict[str, Any], environ: dict[str, str], restored: Any
) -> None:
    workflow = await planner_sets((name, value))
    ids = workflow.hub.name_to_id_map()  # the workflow's own transition on the same value
    workflow.graph.transitions.insert(
        0, Transition(ContextEquals(name, value), AgentTarget(ids["Closer"]))
    )
    session = workflow.attach(config(SAVED, handoffs=[rule], environment=[MONETIZATION]),
                              environ=environ)
    with session:
        await workflow.run(session, timeout=5)
    # Neither the rule nor the graph's own transition routed on the refused value.
    assert speakers(session) == ["user", "InterviewAgent", "Planner"]
    assert [e for e in session.events if e["type"] == "handoff" and e["target"] == "Closer"] == []
    [warning] = [e for e in session.events if e["type"] == "warning"]
    assert (warning["name"], warning["value"], warning["agent"], warning["tool"]) == (
        name, value, "Planner", "set_var"
    )
    assert any(name in text for text in session.warnings)
    # The channel's context_vars hold the run's value (none: the key is gone).
    if restored is None:
        assert name not in session.context and name not in session.state.context
    else:
        assert session.context[name] is restored is session.state.context[name]
    assert session.context == session.state.context
    await workflow.hub.close()


async def test_constants_and_the_base_are_put_back_and_undeclared_names_are_the_chats() -> None:
    workflow = await planner_sets(
        ("max_items", 99),
        ("enterprise_id", "globex"),
        ("scratch", {"n": 1}),  # undeclared: the chat's own, neither reported nor touched
        ("context_saved", True),  # a value the run takes: a flip, and rule 0 routes on it
    )
    cfg = config(SAVED, handoffs=[TO_CLOSER])
    cfg["context_variables"]["declarative_variables"].append(CONSTANT)
    session = workflow.attach(cfg)
    with session:
        await workflow.run(session, timeout=5)
    assert [(e["type"], e["name"], e.get("rule")) for e in session.events
            if e["type"] in ("warning", "context_set")] == [
        ("warning", "max_items", "constant"),
        ("warning", "enterprise_id", "base"),
        ("context_set", "context_saved", None),
    ]
    assert speakers(session)[-2:] == ["Planner", "Closer"]
    context = session.context
    assert (context["max_items"], context["enterprise_id"], context["context_saved"]) == (
        25, "e", True
    )
    assert context.pop("scratch") == {"n": 1}
    assert context == session.state.context
    await workflow.hub.close()


async def test_a_deleted_declared_variable_is_warned_about_and_put_back_before_routing() -> None:
    """``delete_context`` of a declared variable: a warning naming it, and the run's value back
    in ``context_vars`` before the graph folds Planner's packet, so rule 0 still routes on the
    flag the run (and the inspector) holds; deleting an undeclared name stays the chat's."""
    workflow = await planner_calls(
        ToolCall("set_var", name="context_saved", value="true"),  # a flip: rule 0 holds
        ToolCall("set_var", name="scratch", value="1"),
        ToolCall("delete_var", name="context_saved"),
        ToolCall("delete_var", name="max_items"),
        ToolCall("delete_var", name="scratch"),
    )
    cfg = config(SAVED, handoffs=[TO_CLOSER])
    cfg["context_variables"]["declarative_variables"].append(CONSTANT)
    session = workflow.attach(cfg)
    with session:
        await workflow.run(session, timeout=5)
    warnings = [e for e in session.events if e["type"] == "warning"]
    assert [(e["name"], e["value"], e["rule"], e["agent"], e["tool"]) for e in warnings] == [
        ("context_saved", None, "deleted", "Planner", "delete_var"),
        ("max_items", None, "deleted", "Planner", "delete_var"),
    ]
    assert all("deleted" in e["text"] and "the run keeps its value" in e["text"] for e in warnings)
    assert "tool delete_var agent Planner deleted context_saved: refused" in session.warnings[0]
    assert speakers(session)[-2:] == ["Planner", "Closer"]  # routed on the run's value
    context = session.context
    assert (context["context_saved"], context["max_items"]) == (True, 25)
    assert "scratch" not in context  # the chat's own name, deleted by the chat: not reported
    assert context == session.state.context
    await workflow.hub.close()
