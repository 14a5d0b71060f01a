"""Real AG2 chats reporting to a real Daphne (tests/support/live_server.py): the run arrives
with its flips, the server's state equals the adapter's, the server can be down, the runtime
can die mid-chat and resume."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.engine import build_context, replay
from contextadmin_sdk.integrations.autogen import attach
from websockets.sync.client import connect

from devservers.processes import Daphne, wait_for_port
from runs.demo_chats.autogen_chat import DEMO_CONFIG, DEMO_WORKFLOW, OPENING, demo_pattern

from .chats import attach_demo_chat
from .live import api, crashed_run

pytestmark = pytest.mark.slow


def staff_session(server: Any) -> str:
    """A logged-in session of the server's staff user, for the inspector socket."""
    script = (
        "from django.contrib.auth import get_user_model; from django.test import Client; "
        f"c=Client(); c.force_login(get_user_model().objects.get(username={server.username!r})); "
        "print(c.cookies['sessionid'].value)"
    )
    return str(server.manage("shell", "-c", script).stdout.strip().splitlines()[-1])


def run_demo(session: Any, pattern: Any) -> None:
    with session:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)


def test_a_real_chat_reaches_the_server_and_its_state_equals_the_adapters(site) -> None:
    server, token = site
    pattern = demo_pattern()
    session = attach_demo_chat(
        pattern,
        reporter=RunReporter(server.url, token),
    )
    run_demo(session, pattern)
    assert session.reporter is not None and session.reporter.error is None
    assert session.reporter.last_acked_seq == session.state.last_seq == 12

    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    assert state["seq"] == 12
    assert state["state"]["context"] == session.state.context
    assert state["state"]["context"] == session.context.to_dict()
    assert [(f["name"], f["seq"]) for f in state["flips"]] == [
        ("interview_complete", 6),
        ("context_saved", 8),
        ("handoffs_reviewed", 11),
    ]
    assert state["state"]["execution"]["status"] == "completed"
    assert state["state"]["execution"]["path"] == session.state.get("execution.path")
    # Time travel: the server's replay at a past seq equals the adapter's own replay there.
    at7 = api(server.url, token, f"/api/runs/{session.run_id}/state/?at=7")
    base = build_context(
        DEMO_CONFIG.read_bytes(), workflow_name=DEMO_WORKFLOW, enterprise_id="acme", environ={}
    ).values
    mine = replay(DEMO_CONFIG.read_bytes(), base, session.events[:7])
    assert at7["state"]["context"] == mine.context
    assert at7["state"]["context"]["interview_complete"] is True

    # The inspector's socket replays the run: every event in order, with its flips.
    with connect(
        f"{server.daphne.ws_url}/ws/runs/{session.run_id}/?after=0",
        additional_headers={"Origin": server.url, "Cookie": f"sessionid={staff_session(server)}"},
    ) as ws:
        snapshot = json.loads(ws.recv(timeout=10))
        assert snapshot["type"] == "snapshot" and snapshot["seq"] == 0
        messages = [json.loads(ws.recv(timeout=10)) for _ in range(12)]
    assert [m["seq"] for m in messages] == list(range(1, 13))
    assert [m["event"]["type"] for m in messages] == [e["type"] for e in session.events]
    flipped = {m["seq"]: [f["name"] for f in m["flips"]] for m in messages if m["flips"]}
    assert flipped == {6: ["interview_complete"], 8: ["context_saved"], 11: ["handoffs_reviewed"]}
    assert at7["state"]["context"]["context_saved"] is False


def test_demo_command_streams_a_completed_run_and_reuses_its_token(site, tmp_path: Path) -> None:
    server, _ = site
    token_file = tmp_path / "demo.token"
    args = ("demo_ag2", "--url", server.url, "--delay", "0", "--token-file", str(token_file))
    first = server.manage(*args)
    second = server.manage(*args)
    assert "run_status completed" in first.stdout and "run_status completed" in second.stdout
    assert "created the API token" in first.stdout
    assert "created the API token" not in second.stdout  # one named demo token, reused
    assert "flipped handoffs_reviewed -> True" in second.stdout


def test_server_down_then_up_the_chat_is_not_slowed_and_everything_arrives(
    site, tmp_path: Path
) -> None:
    server, token = site
    late = Daphne(server.env, tmp_path / "late.log")  # not started yet: its port refuses

    pattern = demo_pattern()
    baseline = attach_demo_chat(pattern)
    began = time.perf_counter()
    run_demo(baseline, pattern)
    without_server = time.perf_counter() - began

    pattern = demo_pattern()
    session = attach_demo_chat(
        pattern,
        reporter=RunReporter(late.url, token),
        spool_dir=tmp_path,
        flush_timeout=30,
    )
    try:
        with session:
            began = time.perf_counter()
            initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
            with_server_down = time.perf_counter() - began
            late.start()  # the server comes back before the session flushes on exit
            wait_for_port(late.port)
        assert with_server_down < without_server + 0.25
        assert session.reporter is not None and session.reporter.last_acked_seq == 12
        state = api(late.url, token, f"/api/runs/{session.run_id}/state/")
        assert state["state"]["context"] == session.state.context
        assert not (tmp_path / f"{session.run_id}.jsonl").exists()
    finally:
        late.stop()


def test_a_runtime_killed_mid_chat_resumes_its_flags_and_seq(site, tmp_path: Path) -> None:
    server, token = site
    run_id = crashed_run(
        "crash_child_autogen", url=server.url, token=token, spool_dir=tmp_path, kill_after=8
    )

    pattern = demo_pattern()
    session = attach_demo_chat(
        pattern,
        reporter=RunReporter(server.url, token),
        spool_dir=tmp_path,
        run_id=run_id,
    )
    # Restored before the chat: the flags, the turn counts, the seq.
    assert session.context["interview_complete"] is True
    assert session.context["context_saved"] is True
    assert session.context["handoffs_reviewed"] is False
    assert session.state.get("execution.turn_counts") == {"user": 3, "InterviewAgent": 3}
    assert session.state.last_seq == 9  # the dead process's 8, then the resume's run_status
    overview = session.completed_overview()
    assert "interview_complete" in overview and 'InterviewAgent said "NEXT"' in overview
    assert "context_saved" in overview and "save_context_plan" in overview
    assert "handoffs_reviewed" not in overview

    with session:
        result, _, _ = initiate_group_chat(pattern=pattern, messages=overview, max_rounds=30)
    # The reached milestones route straight through: InterviewAgent and ContextVariablesAgent
    # hand off at once (transit messages), HandoffsAgent does the remaining work.
    assert [m.get("name") for m in result.chat_history][-2:] == ["HandoffsAgent", "HandoffsAgent"]
    assert session.context["handoffs_reviewed"] is True
    state = api(server.url, token, f"/api/runs/{run_id}/state/")
    assert state["seq"] == session.state.last_seq > 8
    assert state["state"]["context"] == session.state.context
    assert [f["name"] for f in state["flips"]] == [
        "interview_complete",
        "context_saved",
        "handoffs_reviewed",
    ]
    assert [f.name for f in session.flips] == [f["name"] for f in state["flips"]]
    # Where the new process took over: right after the dead one's last event.
    assert state["state"]["execution"]["resumes"] == [{"seq": 9, "from": "running"}]
    assert session.events[8] == {"type": "run_status", "status": "running", "seq": 9}
    assert state["state"]["execution"]["status"] == "completed"


def test_a_chat_that_raises_pauses_the_run_then_resumes_running_until_completed(site) -> None:
    server, token = site

    def exploding_pattern() -> Any:
        pattern = demo_pattern()
        planner = pattern.agents[1]

        def explode(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the LLM provider is down")

        planner.register_reply([object, None], explode)  # ContextVariablesAgent's turn fails
        return pattern

    pattern = exploding_pattern()
    session = attach_demo_chat(
        pattern,
        reporter=RunReporter(server.url, token),
    )
    with pytest.raises(RuntimeError, match="provider is down"), session:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    assert state["state"]["execution"]["status"] == "paused"
    assert state["state"]["context"]["interview_complete"] is True

    pattern = demo_pattern()
    resumed = attach_demo_chat(
        pattern,
        reporter=RunReporter(server.url, token),
        run_id=session.run_id,
    )
    assert resumed.state.get("execution.status") == "running"
    run_demo(resumed, pattern)
    assert resumed.context["context_saved"] is True and resumed.context["handoffs_reviewed"]
    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    assert state["state"]["execution"]["status"] == "completed"
    assert state["state"]["context"] == resumed.state.context

    with pytest.raises(ValueError, match="has ended"):
        attach(
            demo_pattern(),
            DEMO_CONFIG,
            workflow_name=DEMO_WORKFLOW,
            enterprise_id="acme",
            environ={},
            reporter=RunReporter(server.url, token),
            run_id=session.run_id,
        )


def test_a_refused_token_never_hurts_the_chat_and_is_logged_once(site, caplog) -> None:
    server, _ = site
    pattern = demo_pattern()
    session = attach_demo_chat(
        pattern,
        reporter=RunReporter(server.url, "ca_00000000_not-a-real-token"),
    )
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"), session:
        result, context, _ = initiate_group_chat(
            pattern=pattern, messages=OPENING, max_rounds=30
        )
    assert [m.get("name") for m in result.chat_history][-1] == "HandoffsAgent"
    assert context["handoffs_reviewed"] is True  # the chat ran exactly as without a server
    assert session.reporter is not None and "401" in (session.reporter.error or "")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "create_api_token" in errors[0]  # the cause and the fix, once
