"""Where a run resumed, on the server (docs/api.md "Read the state", docs/inspector.md "Agents"):
a ``run_status`` of ``running`` after the run's first event (what ``attach(..., run_id=...)``
sends when it takes a run over) is kept in ``execution.resumes`` at its place among the
hand-offs, and the state API and the inspector's snapshot add when the server received it.
Reading a past state replays the log without logging its flips again."""

from __future__ import annotations

import json
import logging

import pytest

from runs import selectors
from runs.models import RunEvent
from tests.runs.conftest import Api

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_THE_CRASH = [
    {"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT", "seq": 1},  # a flip
    {"type": "handoff", "agent": "InterviewAgent", "target": "PlannerAgent", "seq": 2},
]
AFTER_THE_RESUME = [
    {"type": "run_status", "status": "running", "seq": 3},  # a new runtime took the run over
    {"type": "handoff", "agent": "PlannerAgent", "target": "WriterAgent", "seq": 4},
    {"type": "run_status", "status": "paused", "seq": 5},
    {"type": "run_status", "status": "running", "seq": 6},  # and went on after a pause
]


def received(run_id: str, seq: int) -> str:
    return RunEvent.objects.get(run_id=run_id, seq=seq).received_at.isoformat()


def test_the_state_marks_where_the_run_resumed_and_when(api: Api) -> None:
    run_id = api.start()["run_id"]
    assert api.events(run_id, BEFORE_THE_CRASH).status_code == 200
    assert api.events(run_id, AFTER_THE_RESUME).status_code == 200

    state = api.get(f"/api/runs/{run_id}/state/").json()
    execution = state["state"]["execution"]
    assert [edge["seq"] for edge in execution["path"]] == [2, 4]
    assert execution["resumes"] == [{"seq": 3, "from": "running"}, {"seq": 6, "from": "paused"}]
    assert state["resumes"] == [
        {"seq": 3, "from": "running", "received_at": received(run_id, 3)},
        {"seq": 6, "from": "paused", "received_at": received(run_id, 6)},
    ]
    # Time travel: the marks up to the shown event only.
    assert api.get(f"/api/runs/{run_id}/state/?at=2").json()["resumes"] == []
    at_4 = api.get(f"/api/runs/{run_id}/state/?at=4").json()
    assert [mark["seq"] for mark in at_4["resumes"]] == [3]
    # The inspector's first message carries them too (a reload shows the mark).
    snapshot = selectors.run_snapshot(run_id=run_id, after=None)
    assert snapshot["resumes"] == state["resumes"]
    # Each live (and catch-up) event message carries the server's mark: the page never decides
    # by itself which event resumed the run.
    messages = {seq: json.loads(text) for seq, text in selectors.run_event_messages(
        run_id=run_id, after=0)}
    marked = {seq: message["resumed"] for seq, message in messages.items() if "resumed" in message}
    # replayed (the page opens on an earlier snapshot): the time the server received each
    assert list(marked.values()) == state["resumes"]


def test_a_run_that_never_resumed_has_no_mark(api: Api) -> None:
    run_id = api.start()["run_id"]
    # A first event of running resumes nothing: nothing ran before it.
    first = [{"type": "run_status", "status": "running", "seq": 1}]
    moved = [{**event, "seq": event["seq"] + 1} for event in BEFORE_THE_CRASH]
    assert api.events(run_id, first + moved).status_code == 200
    state = api.get(f"/api/runs/{run_id}/state/").json()
    assert state["resumes"] == [] and "resumes" not in state["state"]["execution"]


def test_reading_past_states_logs_no_flip_again(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    run_id = api.start()["run_id"]
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk"):
        assert api.events(run_id, BEFORE_THE_CRASH + AFTER_THE_RESUME).status_code == 200
        flipped = [r.getMessage() for r in caplog.records if "flipped" in r.getMessage()]
        assert len(flipped) == 1  # ingest: the flip as it happened
        caplog.clear()
        for at in (1, 2, 4):  # time travel replays the log from the start snapshot
            assert api.get(f"/api/runs/{run_id}/state/?at={at}").status_code == 200
        assert len(selectors.run_event_messages(run_id=run_id, after=0)) == 6  # catch-up
    assert [r.getMessage() for r in caplog.records if "flipped" in r.getMessage()] == []
