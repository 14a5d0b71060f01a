"""A single ag2.Agent run (no network) under contextadmin_sdk.integrations.ag2: tools, variables,
flags."""

from __future__ import annotations

import json
from typing import Any

from ag2 import Context
from contextadmin_sdk.integrations.ag2 import AgentSession, attach
from contextadmin_sdk.integrations.ag2.scripted import ToolCall, scripted_agent

from .chats import PLAN_OWNER, config, derived

seen: list[dict[str, Any]] = []


def save_plan(names: str, context: Context) -> str:
    """Save a plan: writes a declared variable through the turn's variables."""
    seen.append(dict(context.variables))
    context.variables["plan_owner"] = "tool"
    return json.dumps({"saved": len(names.split(","))})


def check_plan(context: Context) -> str:
    """Report what the agent's variables say now (a flag flipped earlier in the turn)."""
    seen.append(dict(context.variables))
    return "checked"


async def test_a_single_agents_tools_variables_and_flags() -> None:
    seen.clear()
    cfg = config(
        derived("planned", {"type": "tool_response", "tool": "save_plan", "status": "success"}),
        derived(
            "said_done", {"type": "agent_text", "agent": "Planner", "match": {"equals": "DONE"}}
        ),
        derived("twice", {"type": "agent_turn_count", "agent": "Planner", "count": 2}),
        database=[PLAN_OWNER],
        handoffs=[{"source_agent": "Planner", "target_agent": "Other", "condition": "${planned}"}],
    )
    agent = scripted_agent(
        "Planner",
        [ToolCall("save_plan", names="a,b,c"), ToolCall("check_plan"), "Saved.", "DONE"],
        tools=[save_plan, check_plan],
    )
    session = attach(agent, cfg, workflow_name="W", enterprise_id="e", environ={})
    assert isinstance(session, AgentSession)
    with session:
        first = await agent.ask("Plan it.")
        second = await agent.ask("Anything else?")
    assert (first.body, second.body) == ("Saved.", "DONE")
    # seeded before the first tool ran; the flip of `planned` visible to the next tool
    assert seen[0]["product_tier"] == "beta" and seen[0]["planned"] is False
    assert seen[1]["planned"] is True and seen[1]["plan_owner"] == "tool"
    assert [f.name for f in session.flips] == ["planned", "said_done", "twice"]
    assert [e["type"] for e in session.events] == [
        "context_set",
        "tool_response",
        "tool_response",
        "agent_text",
        "agent_text",
        "run_status",
    ]
    assert session.events[0] == {
        "type": "context_set",
        "name": "plan_owner",
        "value": "tool",
        "agent": "Planner",
        "tool": "save_plan",
        "seq": 1,
    }
    assert session.context["plan_owner"] == "tool" and session.context["said_done"] is True
    assert session.context == {**session.state.context}
    assert session.state.get("execution.path") == []  # a single agent never hands off
    assert session.skipped_handoffs == [
        {"index": 0, "condition": "${planned}", "reason": "a single agent"}
    ]
    assert session.state.get("execution.status") == "completed"


async def test_a_detached_agent_runs_unobserved() -> None:
    agent = scripted_agent("Planner", ["One.", "Two."])
    session = attach(agent, config(), workflow_name="W", enterprise_id="e", environ={})
    with session:
        await agent.ask("Hi")
    await agent.ask("Again")  # after the with block: not this run's
    assert [e["type"] for e in session.events] == ["agent_text", "run_status"]
    again = attach(agent, config(), workflow_name="W", enterprise_id="e", environ={})
    with again:
        await agent.ask("Third")
    assert [e.get("text") for e in again.events] == ["Done.", None]
    assert sum(type(m.middleware).__name__ == "SessionHook" for m in agent.middleware) == 1


def set_tier(context: Context) -> str:
    """Change a declarative constant and a derived flag to a string: both refused."""
    context.variables["product_tier"] = "gold"
    context.variables["planned"] = "yes"
    return "set"


def read_back(context: Context) -> str:
    seen.append(dict(context.variables))
    return "read"


async def test_a_single_agents_refused_values_are_put_back_in_its_variables() -> None:
    seen.clear()
    cfg = config(derived("planned", {"type": "tool_response", "tool": "nothing", "status": "x"}))
    agent = scripted_agent(
        "Planner", [ToolCall("set_tier"), ToolCall("read_back"), "Done."],
        tools=[set_tier, read_back],
    )
    session = attach(agent, cfg, workflow_name="W", enterprise_id="e", environ={})
    with session:
        await agent.ask("Go.")
    refused = [(e["name"], e["rule"]) for e in session.events if e["type"] == "warning"]
    assert sorted(refused) == [("planned", "type"), ("product_tier", "constant")]
    assert seen[0]["product_tier"] == "beta" and seen[0]["planned"] is False  # the next tool
    assert session.context["product_tier"] == "beta" and session.context["planned"] is False
    assert session.context == {**session.state.context}


def drop_tier(context: Context) -> str:
    """Delete a declarative constant and a derived flag from the turn's variables."""
    del context.variables["product_tier"]
    del context.variables["planned"]
    return "dropped"


async def test_a_single_agents_deleted_variables_are_warned_about_and_put_back() -> None:
    seen.clear()
    cfg = config(derived("planned", {"type": "tool_response", "tool": "nothing", "status": "x"}))
    agent = scripted_agent(
        "Planner",
        [ToolCall("drop_tier"), ToolCall("read_back"), "Done."],
        tools=[drop_tier, read_back],
    )
    session = attach(agent, cfg, workflow_name="W", enterprise_id="e", environ={})
    with session:
        await agent.ask("Go.")
    refused = [(e["name"], e["value"], e["rule"]) for e in session.events if e["type"] == "warning"]
    assert refused == [("product_tier", None, "deleted"), ("planned", None, "deleted")]
    assert seen[0]["product_tier"] == "beta" and seen[0]["planned"] is False  # the next tool
    assert session.context["product_tier"] == "beta" and session.context["planned"] is False
    assert session.context == {**session.state.context}
