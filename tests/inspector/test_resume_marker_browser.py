"""The run page marks where a run resumed on its path taken (docs/inspector.md "Agents"): a
runtime stops mid-run, a new one resumes it (``RunReporter.resume``, then the ``run_status`` of
``running`` that ``attach(..., run_id=...)`` sends) and the line under the agents graph shows
"⟲ resumed here at #N (time)" between the hand-offs before and after, live, after a reload and
in time travel (Debian Chromium against a real Daphne)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
from contextadmin_sdk.client import RunReporter
from playwright.sync_api import expect

from tests.inspector.conftest import LiveServer
from tests.inspector.test_browser import open_run, travel

pytestmark = pytest.mark.browser

TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
PATH = re.compile(
    rf"InterviewAgent → ContextVariablesAgent at #2, ⟲ resumed here at #3 \({TIME}\), "
    r"ContextVariablesAgent → HandoffsAgent at #4$"
)


def test_the_path_taken_marks_where_a_new_runtime_resumed_the_run(page, live: LiveServer):
    first = live.reporter("Routed")
    open_run(page, first.run_id)
    first.event("agent_text", agent="InterviewAgent", text="next")  # 1
    first.event("handoff", agent="InterviewAgent", target="ContextVariablesAgent", rule=0)  # 2
    # The runtime dies; a new process resumes the run as attach(..., run_id=...) does.
    again = RunReporter(live.url, live.secret, batch_size=1, retries=2)
    again.resume(first.run_id)
    again.event("run_status", status="running")  # 3
    again.event("handoff", agent="ContextVariablesAgent", target="HandoffsAgent", rule=1)  # 4

    summary = page.locator("#graph .graph-summary")
    marker = summary.locator(".path-resume")
    expect(summary).to_contain_text(PATH)  # live: from the event messages
    expect(marker).to_have_count(1)
    expect(marker).to_have_attribute("title", re.compile("a new one took it over here"))

    time.sleep(1.1)  # the page opens again later than the server received the resume
    page.reload()  # it replays the stored events: each mark keeps the time the server received it
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(summary).to_contain_text(PATH)
    received = again.fetch_state(first.run_id)["resumes"][0]["received_at"]
    shown = datetime.fromisoformat(received).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    expect(marker).to_have_text(f"⟲ resumed here at #3 ({shown})")

    travel(page, 2)  # before the resume: no mark
    expect(page.locator("#graph-at")).to_have_text("after #2")
    expect(marker).to_have_count(0)
    travel(page, 3)
    expect(page.locator("#graph-at")).to_have_text("after #3")
    expect(marker).to_have_count(1)


def test_the_first_speaker_after_a_resume_is_no_turn_with_the_last_one_before(
        page, live: LiveServer):
    """The agents graph drew "ContextVariablesAgent ↔ user · 1 turn" across a resume, a turn
    AG2 never routed: the new runtime's first speaker followed no one in its chat."""
    first = live.reporter("Routed")
    open_run(page, first.run_id)
    first.event("agent_text", agent="user", text="hello")  # 1
    first.event("agent_text", agent="InterviewAgent", text="next")  # 2
    again = RunReporter(live.url, live.secret, batch_size=1, retries=2)
    again.resume(first.run_id)
    again.event("run_status", status="running")  # 3: a new runtime
    again.event("agent_text", agent="user", text="where were we?")  # 4
    exchanges = "JSON.stringify(inspector.model.execution.exchanges)"
    page.wait_for_function("inspector.model.lastSeq === 4")
    live_pairs = page.evaluate(exchanges)
    page.reload()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    page.wait_for_function("inspector.model.lastSeq === 4")
    for shown in (live_pairs, page.evaluate(exchanges)):  # watched live, and replayed
        assert '"source":"InterviewAgent","target":"user"' not in shown, shown
        assert '"source":"user","target":"InterviewAgent"' in shown, shown
    assert [pair["source"] for pair in again.fetch_state(first.run_id)["state"]["execution"][
        "exchanges"]] == ["user"]
