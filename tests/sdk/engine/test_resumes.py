"""Where a run resumed (``execution.resumes``, engine/lifecycle.py) and folds of past events
that log no flip again (``replaying``, ``replay``): a log line says a flag flipped now."""

from __future__ import annotations

import logging

import pytest
from contextadmin_sdk.engine import RunState, replay, replaying
from contextadmin_sdk.engine.format import RESUMES_MAX

from .support import demo_config, demo_events

BASE = {"enterprise_id": "acme", "workflow_name": "Generator"}
RUNNING = {"type": "run_status", "status": "running"}
PAUSED = {"type": "run_status", "status": "paused"}


def flipped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "flipped" in r.getMessage()]


def test_running_after_the_first_event_marks_a_resume_and_what_it_resumed_from() -> None:
    state = RunState(demo_config(), BASE)
    state.apply(RUNNING)  # 1: the run's first event resumes nothing
    assert "resumes" not in state.execution
    state.apply({"type": "agent_text", "agent": "InterviewAgent", "text": "hi"})  # 2
    state.apply(RUNNING)  # 3: a new runtime took the run over
    state.apply(PAUSED)  # 4
    state.apply(PAUSED)  # 5: no resume
    state.apply(RUNNING)  # 6: on after the pause
    assert state.execution["resumes"] == [
        {"seq": 3, "from": "running"},
        {"seq": 6, "from": "paused"},
    ]
    assert RunState.from_dict(demo_config(), state.to_dict()).execution == state.execution


def test_the_first_speaker_after_a_resume_followed_no_one_in_the_chat() -> None:
    """A new runtime took the run over: its first turn is no exchange with the last speaker of
    the runtime that stopped (the agents graph drew a turn AG2 never routed)."""
    state = RunState(demo_config(), BASE)
    for agent in ("user", "InterviewAgent"):
        state.apply({"type": "agent_text", "agent": agent, "text": "hi"})
    state.apply(PAUSED)
    state.apply(RUNNING)
    assert state.execution["current_agent"] is None
    for agent in ("user", "InterviewAgent"):
        state.apply({"type": "agent_text", "agent": agent, "text": "again"})
    pairs = {(x["source"], x["target"]): x["turns"] for x in state.execution["exchanges"]}
    assert pairs == {("user", "InterviewAgent"): 2}  # no InterviewAgent -> user across the resume
    assert state.execution["current_agent"] == "InterviewAgent"


def test_the_latest_resumes_are_kept() -> None:
    state = RunState(demo_config(), BASE)
    state.apply(PAUSED)
    for _ in range(RESUMES_MAX + 5):
        state.apply(RUNNING)
    resumes = state.execution["resumes"]
    assert len(resumes) == RESUMES_MAX and resumes[-1]["seq"] == state.last_seq


def test_a_replay_logs_no_flip_and_a_live_fold_logs_each_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events = demo_events()
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk.engine"):
        replayed = replay(demo_config(), BASE, events)
        state = RunState(demo_config(), BASE)
        with replaying():
            state.apply(events[0])
        assert flipped(caplog) == []
        for event in events[1:]:
            state.apply(event)
    assert replayed.flips == state.flips and len(state.flips) == 1
    assert [line.split(" flipped")[0] for line in flipped(caplog)] == ["derived interview_complete"]
