"""Seed 004 on a real AG2 Classic group chat (scripted agents, no LLM): a tool's JSON answer is
written to the run's agent namespace by the workflow's output mapping, as the server would."""

import json
from typing import Any

from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.engine import replay
from contextadmin_sdk.integrations.autogen import attach

from .chats import ToolCall, config, derived, two_stage_pattern

# No ``from __future__ import annotations`` in this module: it defines an AG2 tool.


def extract_keywords(objective: str) -> str:
    """Extract search terms from the objective."""
    return json.dumps({"keywords": [word for word in objective.split() if len(word) > 3]})


def test_a_tools_answer_is_written_to_the_agent_namespace() -> None:
    cfg: dict[str, Any] = config(
        derived("interview_complete",
                {"type": "agent_text", "agent": "InterviewAgent", "match": {"equals": "NEXT"}}),
        handoffs=[{"source_agent": "InterviewAgent", "target_agent": "Planner",
                   "condition": "${interview_complete}"}],
    )
    cfg["outputs"] = [
        {"tool": "extract_keywords", "field": "keywords", "to": "agent.intermediate.keywords"}
    ]
    pattern = two_stage_pattern(
        interview=["NEXT"], answers=[],
        planner=[ToolCall("extract_keywords", objective="find the project X report")],
        tools=[extract_keywords],
    )
    session = attach(pattern, cfg, workflow_name="Research", enterprise_id="e", environ={})
    with session:
        initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=30)

    assert session.state.get("agent.intermediate.keywords") == ["find", "project", "report"]
    assert session.state.writes["agent.intermediate.keywords"]["tool"] == "extract_keywords"
    assert session.state.resolve("Search {{agent.intermediate.keywords}}").text == (
        'Search ["find","project","report"]'
    )
    # the server replays the same events to the same namespaces
    events = [{k: v for k, v in e.items() if k != "seq"} for e in session.events]
    rebuilt = replay(cfg, dict(session.state.context), events)  # agent starts empty either way
    assert rebuilt.agent == session.state.agent
