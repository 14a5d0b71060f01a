"""A refused run start (issue 20, item 6) against a live Daphne and a real AG2 chat: one error
naming the cause and the fix, no run link, the events kept; once the operator fixes the
cause, they all arrive (in memory: ``retry_start``; with a spool: a resume)."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import ReportError, RunReporter
from contextadmin_sdk.integrations.autogen import attach

from runs.demo_chats.autogen_chat import (
    DEMO_CONFIG,
    DEMO_WORKFLOW,
    OPENING,
    demo_pattern,
)

from .chats import attach_demo_chat

pytestmark = pytest.mark.slow


def errors_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def run_chat(session: Any, pattern: Any) -> None:
    with session:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)


def test_a_bad_token_keeps_the_events_in_memory_until_the_token_is_fixed(
    site: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server, token = site
    pattern = demo_pattern()
    reporter = RunReporter(server.url, "ca_00000000_not-a-real-token")
    session = attach_demo_chat(
        pattern,
        reporter=reporter, flush_timeout=1,
    )
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        assert reporter.wait_started(10) is False  # demo_ag2 prints no link then
        run_chat(session, pattern)
    errors = errors_of(caplog)
    assert len(errors) == 1, errors
    assert "401" in errors[0] and "create_api_token" in errors[0]  # the cause and the fix
    assert "retry_start()" in errors[0]
    with pytest.raises(ReportError, match="404"):
        RunReporter(server.url, token).fetch_state(session.run_id)  # no such run: no link
    reporter.token = token  # the operator gave the runtime a valid token
    reporter.retry_start()
    assert reporter.close(10) is True
    state = RunReporter(server.url, token).fetch_state(session.run_id)
    assert state["seq"] == session.state.last_seq == len(session.events)
    assert state["state"]["execution"]["status"] == "completed"
    assert state["runtime"]["framework"] == "autogen"


def test_an_unknown_workflow_keeps_the_spool_and_a_resume_delivers_it_once_imported(
    site: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, token = site
    name = f"Later{uuid.uuid4().hex[:8]}"
    pattern = demo_pattern()
    session = attach(
        pattern, DEMO_CONFIG, workflow_name=name, enterprise_id="acme", environ={},
        reporter=RunReporter(server.url, token), spool_dir=tmp_path, flush_timeout=1,
    )
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        run_chat(session, pattern)
    errors = errors_of(caplog)
    assert len(errors) == 1, errors
    assert "404" in errors[0] and "import_context" in errors[0]
    spool = tmp_path / f"{session.run_id}.jsonl"
    assert spool.exists() and str(spool) in errors[0]
    server.manage("import_context", str(DEMO_CONFIG), "--workflow", name)  # the fix
    # A new process resumes it: the spool's start request creates the run, then its events.
    reporter = RunReporter(server.url, token)
    reporter.use_background(spool_dir=tmp_path)
    resumed = reporter.resume(session.run_id)
    assert resumed.server is None and len(resumed.unsent) == len(session.events)
    assert reporter.close(10) is True
    state = RunReporter(server.url, token).fetch_state(session.run_id)
    assert state["seq"] == len(session.events)
    assert state["state"]["execution"]["status"] == "completed"
    assert not spool.exists()  # delivered and ended: the spool is gone


def test_definitions_fetched_for_another_workflow_are_refused_before_the_chat(
    site: Any,
) -> None:
    """``attach`` with definitions fetched for another workflow than ``workflow_name``: a
    ValueError naming both before any run starts (the same for AG2 1.x: one ``open_run``)."""
    server, token = site
    reporter = RunReporter(server.url, token)
    chat = reporter.definitions(DEMO_WORKFLOW)
    pattern = demo_pattern()
    refusal = r"fetched for workflow 'GeneratorChat'.*run is for workflow 'Generator'"
    with pytest.raises(ValueError, match=refusal):
        attach(pattern, chat, workflow_name="Generator", enterprise_id="acme", reporter=reporter)
    assert reporter.run_id is None  # no run started, nothing queued
    assert pattern.context_variables.to_dict() == {}  # the chat was not touched
