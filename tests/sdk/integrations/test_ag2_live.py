"""Real AG2 1.x workflows reporting to a real Daphne (tests/support/live_server.py): the run
ends completed with the adapter's state, ``demo_ag2`` runs 1.x and Classic with the same flips
and hand-off path, and a runtime SIGKILLed mid-workflow resumes in a new process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ag2 import Context
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.engine import TEXT_MAX_CHARS
from contextadmin_sdk.integrations.ag2 import attach
from contextadmin_sdk.integrations.ag2.scripted import ToolCall, scripted_agent

from runs.demo_chats.ag2_workflow import DEMO_CONFIG, DEMO_WORKFLOW, demo_workflow, run_demo

from .live import api, crashed_run
from .workflows import attach_demo

pytestmark = pytest.mark.slow


def _run_of(stdout: str) -> str:
    line = next(line for line in stdout.splitlines() if line.startswith("run "))
    return line.split(" ", 1)[1].split(":", 1)[0]


def _flips_and_path(state: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    flips = [(f["name"], f["value"], f.get("cause")) for f in state["flips"]]
    path = [(e["source"], e["target"], e["rule"]) for e in state["state"]["execution"]["path"]]
    return flips, path


async def test_a_1x_workflow_reaches_the_server_completed_with_the_adapters_state(site) -> None:
    server, token = site
    demo = await demo_workflow()
    session = attach_demo(
        demo,
        reporter=RunReporter(server.url, token),
    )
    async with session:
        await run_demo(demo, session)
    await demo.hub.close()
    assert session.reporter is not None and session.reporter.error is None
    assert session.reporter.last_acked_seq == session.state.last_seq == 14
    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    assert state["state"]["context"] == session.state.context == session.context
    assert state["state"]["execution"]["status"] == "completed"
    assert [(f["name"], f["seq"]) for f in state["flips"]] == [
        ("interview_complete", 6),
        ("context_saved", 8),
        ("handoffs_reviewed", 13),
    ]
    assert state["state"]["execution"]["path"] == session.state.get("execution.path")
    # attached without MongoDB: the run page says exactly why the runtime has no value
    assert state["provenance"]["concept_overview"]["reason"] == (
        "the runtime could not read it: no MongoDB configured"
    )
    if state.get("runtime"):  # the run records the runtime that reported it
        assert state["runtime"]["framework"] == "ag2"


def test_demo_command_runs_1x_by_default_and_classic_with_the_same_flips_and_path(site) -> None:
    server, token = site
    args = ("demo_ag2", "--url", server.url, "--delay", "0", "--token", token)
    ag2x = server.manage(*args)
    classic = server.manage(*args, "--classic")
    assert "run_status completed" in ag2x.stdout and "run_status completed" in classic.stdout
    ag2x_state = api(server.url, token, f"/api/runs/{_run_of(ag2x.stdout)}/state/")
    classic_state = api(server.url, token, f"/api/runs/{_run_of(classic.stdout)}/state/")
    for state in (ag2x_state, classic_state):
        assert state["state"]["execution"]["status"] == "completed"
    assert _flips_and_path(ag2x_state) == _flips_and_path(classic_state)
    flips, path = _flips_and_path(ag2x_state)
    assert [name for name, _, _ in flips] == [
        "interview_complete",
        "context_saved",
        "handoffs_reviewed",
    ]
    assert path == [
        ("InterviewAgent", "ContextVariablesAgent", 0),
        ("ContextVariablesAgent", "HandoffsAgent", 1),
    ]
    assert ag2x_state["state"]["context"] == classic_state["state"]["context"]


async def test_a_1x_runtime_killed_mid_workflow_resumes_in_a_new_process(
    site, tmp_path: Path
) -> None:
    server, token = site
    run_id = crashed_run(
        "crash_child_ag2", url=server.url, token=token, spool_dir=tmp_path, kill_after=8
    )

    demo = await demo_workflow(answers=["Looks right."])
    session = attach_demo(
        demo,
        reporter=RunReporter(server.url, token),
        spool_dir=tmp_path,
        run_id=run_id,
    )
    # Restored before the workflow: the flags (into the channel's context_vars), turn counts, seq.
    seeded = session.knobs()["context_vars"]
    assert seeded["interview_complete"] is True and seeded["context_saved"] is True
    assert seeded["handoffs_reviewed"] is False
    assert session.state.get("execution.turn_counts") == {"user": 3, "InterviewAgent": 3}
    assert session.state.last_seq == 9  # the dead process's 8, then the resume's run_status
    overview = session.completed_overview()
    assert 'InterviewAgent said "NEXT"' in overview and "save_context_plan" in overview
    assert "handoffs_reviewed" not in overview

    async with session:
        await run_demo(demo, session, opening=overview)
    await demo.hub.close()
    # session.events holds what the crashed process had not delivered, then this process's
    resumed = [event for event in session.events if event["seq"] > 8]
    # First, where the run resumed (the run page marks it on the path), then the overview.
    assert resumed[0] == {"type": "run_status", "status": "running", "seq": 9}
    assert resumed[1] == {"type": "agent_text", "agent": "user", "text": overview, "seq": 10}
    # The continuing agent got the overview: the saved plan routes the user to HandoffsAgent.
    assert [e.get("agent") for e in resumed[2:5]] == ["HandoffsAgent", "user", "HandoffsAgent"]
    state = api(server.url, token, f"/api/runs/{run_id}/state/")
    assert state["seq"] == session.state.last_seq > 8
    assert state["state"]["execution"]["resumes"] == [{"seq": 9, "from": "running"}]
    assert [mark["seq"] for mark in state["resumes"]] == [9]
    assert state["state"]["context"] == session.state.context
    assert [f["name"] for f in state["flips"]] == [
        "interview_complete",
        "context_saved",
        "handoffs_reviewed",
    ]
    assert state["state"]["execution"]["status"] == "completed"


BIG = 1_200_000  # characters: more than any request the server takes (1 MB)


def save_context_plan(context: Context) -> str:
    """The demo's tool, grown: megabytes of JSON back, and a declared variable set as large."""
    context.variables["concept_overview"] = "c" * BIG
    return json.dumps({"saved": True, "blob": "b" * BIG})


async def test_a_tool_result_larger_than_the_server_takes_is_folded_as_the_server_gets_it(
    site,
) -> None:
    """The reporter refuses an event no request can carry; the adapter folded it anyway, so
    the chat's state ran ahead of the inspector's (one seq more, a node the server lacks)."""
    server, token = site
    agent = scripted_agent(
        "ContextVariablesAgent", [ToolCall("save_context_plan"), "Saved."],
        tools=[save_context_plan],
    )
    session = attach(
        agent, DEMO_CONFIG, workflow_name=DEMO_WORKFLOW, enterprise_id="acme", environ={},
        reporter=RunReporter(server.url, token),
    )
    with session:
        await agent.ask("Save the plan.")
    assert session.reporter is not None and session.reporter.error is None
    assert session.reporter.oversized == 0  # nothing reached the reporter too large to send
    assert session.reporter.last_acked_seq == session.state.last_seq
    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    assert state["state"]["context"] == session.state.context
    assert state["state"]["nodes"] == session.state.nodes
    assert session.state.context["context_saved"] is True  # the tool's response still counts
    response = next(e for e in session.events if e["type"] == "tool_response")
    assert response["data"] == {"content": response["data"]["content"][:TEXT_MAX_CHARS]}
    assert any("more than the server takes" in w for w in session.warnings)
    refused = [e for e in session.events if e["type"] == "warning"]
    assert [(e["name"], e["rule"]) for e in refused] == [("concept_overview", "type")]
    assert "larger than the server takes" in refused[0]["text"]
