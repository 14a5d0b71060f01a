"""Small scripted chats and configs for the AG2 tests (real AG2, no LLM)."""

import json
from collections.abc import Callable
from typing import Any

from autogen.agentchat.group import (
    ContextVariables,
    ReplyResult,
    RevertToUserTarget,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import DefaultPattern
from contextadmin_sdk.integrations.autogen import AG2Session, attach
from contextadmin_sdk.integrations.autogen.scripted import (
    ToolCall,
    scripted_agent,
    scripted_tool_agent,
)

from runs.demo_chats.autogen_chat import DEMO_CONFIG, DEMO_WORKFLOW

# No ``from __future__ import annotations`` in this module: it defines AG2 tools.


def attach_demo_chat(pattern: Any, **options: Any) -> AG2Session:
    """Attach the Classic demo chat (``runs.demo_chats.autogen_chat``) as the tests run it:
    enterprise ``acme``, an empty environment unless ``environ=`` says otherwise."""
    return attach(
        pattern,
        DEMO_CONFIG,
        workflow_name=DEMO_WORKFLOW,
        enterprise_id="acme",
        **{"environ": {}, **options},
    )


def derived(name: str, *triggers: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "type": "boolean", "default": False, "triggers": list(triggers)}


def config(
    *derived_variables: dict[str, Any],
    handoffs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    environment: list[dict[str, Any]] = (),  # type: ignore[assignment]
    database: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    return {
        "context_variables": {
            "declarative_variables": [{"name": "product_tier", "type": "string", "value": "beta"}],
            "database_variables": list(database),
            "environment_variables": list(environment),
            "derived_variables": list(derived_variables),
        },
        "handoffs": [{"description": "", **rule} for rule in handoffs],
    }


INTERVIEW_DONE = derived(
    "interview_complete",
    {"type": "agent_text", "agent": "InterviewAgent", "match": {"equals": "NEXT"}},
)
TO_PLANNER = {
    "source_agent": "InterviewAgent",
    "target_agent": "Planner",
    "condition": "${interview_complete}",
}
PLAN_OWNER = {  # a database variable: the owner of the enterprise's plan
    "name": "plan_owner",
    "type": "string",
    "source": {
        "type": "database",
        "database_name": "db",
        "collection": "Plans",
        "search_by": "enterprise_id",
        "field": "owner",
    },
}


def env_flag(name: str, env_var: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": "boolean",
        "source": {"type": "environment", "env_var": env_var},
    }


def record_plan(
    names: str,
    context_variables: ContextVariables,
) -> ReplyResult:
    """Record the plan; sets the database variable plan_owner like a real tool might."""
    context_variables["plan_owner"] = "tool"
    return ReplyResult(
        message=json.dumps({"saved": len(names.split(","))}), context_variables=context_variables
    )


def save_plan(context_variables: ContextVariables) -> ReplyResult:
    """Save the plan; sets the derived flag plan_saved explicitly (seed 000's "a tool that
    writes a derived variable explicitly")."""
    context_variables["plan_saved"] = True
    return ReplyResult(message="Plan saved.", context_variables=context_variables)


def raise_tier(context_variables: ContextVariables) -> ReplyResult:
    """Try to change the declarative constant product_tier (a run refuses it: a warning)."""
    context_variables["product_tier"] = "gold"
    return ReplyResult(message="Tier raised.", context_variables=context_variables)


# Called with the chat's context at the start of every set_var call (the previous turn is over).
PROBES: list[Callable[[ContextVariables], None]] = []


def set_var(name: str, value: str, context_variables: ContextVariables) -> ReplyResult:
    """Set the context variable ``name`` to the JSON ``value`` (whatever the run allows)."""
    for probe in PROBES:
        probe(context_variables)
    context_variables[name] = json.loads(value)
    return ReplyResult(message=f"{name} set.", context_variables=context_variables)


def del_var(name: str, context_variables: ContextVariables) -> ReplyResult:
    """Delete the context variable ``name`` (AG2 gives a tool a copy of the chat's context and
    merges the result back with ``update``: the chat keeps its value)."""
    del context_variables[name]
    return ReplyResult(message=f"{name} deleted.", context_variables=context_variables)


def deleting_reply(*names: str) -> Callable[..., tuple[bool, None]]:
    """A reply function that deletes ``names`` from the agent's own (the chat's shared)
    ``ContextVariables``, then lets the agent's next reply function answer."""

    def reply(
        recipient: Any, messages: Any = None, sender: Any = None, config: Any = None
    ) -> tuple[bool, None]:
        for name in names:
            recipient.context_variables.remove(name)
        return False, None

    return reply


def failing_tool(reason: str) -> str:
    """Always fail (AG2 reports is_exec_success=False)."""
    raise RuntimeError(reason)


def two_stage_pattern(
    *,
    interview: list[str],
    answers: list[str],
    planner: list[Any] = (),  # type: ignore[assignment]
    tools: list[Any] = (),  # type: ignore[assignment]
) -> DefaultPattern:
    """InterviewAgent talks with the user; Planner (with tools) and Closer wait for hand-offs."""
    user = scripted_agent("user", answers)
    interviewer = scripted_agent("InterviewAgent", interview)
    interviewer.handoffs.set_after_work(RevertToUserTarget())
    if tools:
        planner_agent = scripted_tool_agent("Planner", planner, tools=tools)
    else:
        planner_agent = scripted_agent("Planner", [str(line) for line in planner] or ["Planned."])
    planner_agent.handoffs.set_after_work(TerminateTarget())
    closer = scripted_agent("Closer", ["Closing."])
    closer.handoffs.set_after_work(TerminateTarget())
    return DefaultPattern(
        initial_agent=interviewer,
        agents=[interviewer, planner_agent, closer],
        user_agent=user,
        group_after_work=TerminateTarget(),
    )


__all__ = ["ToolCall"]
