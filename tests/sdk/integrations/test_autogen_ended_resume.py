"""docs/ag2.md's resume of a run that ended while the server was down: the chat ran to its end
against a closed port, ``attach(..., run_id=...)`` against the live server delivers every event
its spool kept, then says the run has ended (nothing to resume) and that it is delivered."""

from __future__ import annotations

import pytest
from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import RunReporter

from devservers.processes import free_port
from runs.demo_chats.autogen_chat import OPENING, demo_pattern

from .chats import attach_demo_chat
from .live import api

pytestmark = pytest.mark.slow


def test_resuming_a_run_that_ended_while_the_server_was_down_delivers_it(site, tmp_path):
    server, token = site
    pattern = demo_pattern()
    session = attach_demo_chat(
        pattern,
        reporter=RunReporter(f"http://127.0.0.1:{free_port()}", token),  # nothing listens
        spool_dir=tmp_path,
        flush_timeout=0.3,
    )
    with session:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
    assert session.state.get("execution.status") == "completed"
    spool = tmp_path / f"{session.run_id}.jsonl"
    assert spool.exists()

    with pytest.raises(ValueError) as ended:
        attach_demo_chat(
            demo_pattern(),
            reporter=RunReporter(server.url, token),
            spool_dir=tmp_path,
            run_id=session.run_id,
        )
    assert str(ended.value) == (
        f"run {session.run_id} has ended (completed): it takes no more events, so there is "
        "nothing to resume; 12 spooled events delivered; the run is completed on the server"
    )
    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    assert state["seq"] == 12 and state["state"]["execution"]["status"] == "completed"
    assert state["state"]["context"] == session.state.context
    assert [(f["name"], f["seq"]) for f in state["flips"]] == [
        (flip["name"], flip["seq"]) for flip in session.state.flips
    ]
    events = api(server.url, token, f"/api/runs/{session.run_id}/events/")["events"]
    assert [event["seq"] for event in events] == [event["seq"] for event in session.events]
    assert not spool.exists()  # ended and acknowledged
