"""A tool that raises, on real AG2 1.x and AG2 Classic: both report status ``error`` and the
error's one-line message, never AG2's traceback (its file paths are the runtime's)."""

from __future__ import annotations

from typing import Any

from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.integrations.autogen import attach as attach_classic

from . import chats, workflows
from .chats import config, derived

FAILED = derived(
    "tool_failed", {"type": "tool_response", "tool": "failing_tool", "status": "error"}
)


def tool_responses(session: Any) -> list[tuple[str, str, Any]]:
    return [
        (e["tool"], e["status"], e["data"]) for e in session.events if e["type"] == "tool_response"
    ]


def assert_no_traceback(session: Any) -> None:
    shown = repr(session.events)
    assert "Traceback" not in shown and "site-packages" not in shown and 'File "' not in shown


async def test_a_raising_tool_on_1x_reports_its_error_not_the_traceback() -> None:
    workflow = await workflows.two_stage(
        interview=["NEXT"],
        answers=[],
        planner=[workflows.ToolCall("failing_tool", reason="disk full"), "Tried."],
        tools=[workflows.failing_tool],
    )
    session = workflow.attach(config(chats.INTERVIEW_DONE, FAILED, handoffs=[chats.TO_PLANNER]))
    with session:
        await workflow.run(session, timeout=5)
    assert tool_responses(session) == [
        ("failing_tool", "error", {"content": "RuntimeError: disk full"})
    ]
    assert [f.name for f in session.flips] == ["interview_complete", "tool_failed"]
    assert_no_traceback(session)
    await workflow.hub.close()


def test_a_raising_tool_on_classic_reports_ag2s_error_text() -> None:
    pattern = chats.two_stage_pattern(
        interview=["NEXT"],
        answers=[],
        planner=[chats.ToolCall("failing_tool", reason="disk full")],
        tools=[chats.failing_tool],
    )
    session = attach_classic(
        pattern,
        config(chats.INTERVIEW_DONE, FAILED, handoffs=[chats.TO_PLANNER]),
        workflow_name="W",
        enterprise_id="e",
        environ={},
    )
    with session:
        initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=10)
    # AG2 Classic tells the model "Error: <message>" (it keeps no exception type): that is
    # what the run gets, one line as on 1.x.
    assert tool_responses(session) == [("failing_tool", "error", {"content": "Error: disk full"})]
    assert [f.name for f in session.flips] == ["interview_complete", "tool_failed"]
    assert_no_traceback(session)
