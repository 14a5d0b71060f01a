"""``manage.py demo_ag2``'s own words, in process: its hints name what works (the MongoDB port in
use, reaching the server), and its event list says each run_status's status. The full run
against a live server: tests/test_newcomer_demo.py and tests/sdk/integrations/test_ag2_live.py."""

from __future__ import annotations

import importlib.util
import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from devservers.processes import free_port
from runs.management.commands.demo_ag2 import event_line

needs_ag2 = pytest.mark.skipif(
    importlib.util.find_spec("ag2") is None, reason='demo_ag2 needs the extra "./sdk[ag2]"'
)


def test_the_event_list_names_a_run_status_by_its_status_and_a_handoff_by_its_target() -> None:
    assert event_line(event={"seq": 14, "type": "run_status", "status": "completed"}) == (
        "  #14 run_status completed"
    )
    handoff = {"seq": 7, "type": "handoff", "agent": "InterviewAgent", "target": "Planner"}
    assert event_line(event=handoff) == "  #7 handoff InterviewAgent -> Planner"
    assert event_line(event={"seq": 3, "type": "tool_response", "tool": "save"}) == (
        "  #3 tool_response save"
    )


@needs_ag2
@pytest.mark.django_db
@pytest.mark.parametrize(("mongo_port", "shown"), [("27118", "27118"), (None, "27018")])
def test_with_the_server_down_the_hints_name_what_works(
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    mongo_port: str | None,
    shown: str,
) -> None:
    settings.MONGODB_URI = ""
    if mongo_port is None:
        monkeypatch.delenv("MONGO_PORT", raising=False)
    else:
        monkeypatch.setenv("MONGO_PORT", mongo_port)  # scripts/run was given another port
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens
    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("demo_ag2", "--url", url, "--token", "ca_x", "--delay", "0", stdout=out)
    assert f"MONGODB_URI=mongodb://127.0.0.1:{shown} " in out.getvalue()
    message = str(raised.value)
    assert "context_variables.json" not in message  # the command takes no exported file
    assert f"is the server running at {url}?" in message
    assert "scripts/run" in message and "--url" in message
