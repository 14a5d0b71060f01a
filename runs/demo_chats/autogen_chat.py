"""The demo group chat: the Generator's agents as a real, scripted AG2 chat (no LLM).

It follows the ``GeneratorChat`` workflow (contextadmin/demo/ag2_context_variables.json): the
InterviewAgent interviews the user until it says NEXT (``interview_complete``, hand-off 0), the
ContextVariablesAgent calls the ``save_context_plan`` tool (``context_saved`` on its response,
hand-off 1), the HandoffsAgent speaks twice (``handoffs_reviewed``, an ``agent_turn_count``
trigger) and the chat ends. Used by ``manage.py demo_ag2``, the tests and docs/ag2.md.

No ``from __future__ import annotations`` here: AG2 builds a tool's schema from its real
annotations, which that import would turn into strings.
"""

import json
from typing import Annotated

from autogen.agentchat.group import (
    ContextExpression,
    ContextVariables,
    ExpressionContextCondition,
    OnContextCondition,
    ReplyResult,
    RevertToUserTarget,
    StayTarget,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import DefaultPattern
from contextadmin_sdk.integrations.autogen.scripted import (
    ToolCall,
    scripted_agent,
    scripted_tool_agent,
)

from runs.demo_chats import generator
from runs.demo_chats.generator import DEMO_CONFIG, DEMO_WORKFLOW, OPENING

__all__ = ["DEMO_CONFIG", "DEMO_WORKFLOW", "OPENING", "demo_pattern", "save_context_plan"]


def save_context_plan(
    names: Annotated[str, "comma-separated variable names"],
    context_variables: ContextVariables,
) -> ReplyResult:
    """Save the planned context variables (the demo records how many)."""
    saved = [name for name in names.split(",") if name]
    # Hand the context back like a real tool would: AG2 merges it after the tool returns.
    return ReplyResult(
        message=json.dumps({"saved": len(saved), "names": saved}),
        context_variables=context_variables,
    )


def demo_pattern(*, delay: float = 0.0) -> DefaultPattern:
    """Build the demo chat's agents and pattern (attach contextadmin to it before running)."""
    user = scripted_agent("user", list(generator.USER_ANSWERS), delay=delay)
    interview = scripted_agent("InterviewAgent", list(generator.INTERVIEW_LINES), delay=delay)
    interview.handoffs.set_after_work(RevertToUserTarget())
    planner = scripted_tool_agent(
        "ContextVariablesAgent",
        [ToolCall("save_context_plan", names=generator.PLANNED), generator.PLANNER_REPLY],
        tools=[save_context_plan],
        delay=delay,
    )
    planner.handoffs.set_after_work(TerminateTarget())
    handoffs = scripted_agent("HandoffsAgent", list(generator.HANDOFFS_LINES), delay=delay)
    handoffs.handoffs.set_after_work(StayTarget())
    handoffs.handoffs.add_after_work(
        OnContextCondition(
            target=TerminateTarget(),
            condition=ExpressionContextCondition(ContextExpression("${handoffs_reviewed}")),
        )
    )
    return DefaultPattern(
        initial_agent=interview,
        agents=[interview, planner, handoffs],
        user_agent=user,
        group_after_work=TerminateTarget(),
    )
