"""The GeneratorChat script that ``simulate_run`` replays by default is what ``demo_ag2``'s chat
reports: re-record it (the events below, one a line, without seq) when the demo chat changes."""

from __future__ import annotations

import json

from autogen.agentchat import initiate_group_chat

from contextadmin.demo import DEMO_WORKFLOWS_BY_NAME
from runs.demo_chats.autogen_chat import (
    DEMO_CONFIG,
    DEMO_WORKFLOW,
    OPENING,
    demo_pattern,
)

from .chats import attach_demo_chat


def test_the_shipped_script_is_the_demo_chats_run() -> None:
    demo = DEMO_WORKFLOWS_BY_NAME[DEMO_WORKFLOW]
    assert demo.config_path == DEMO_CONFIG  # one file: what demo_setup imports, AG2 follows
    pattern = demo_pattern()
    session = attach_demo_chat(pattern)
    with session:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
    reported = [{k: v for k, v in event.items() if k != "seq"} for event in session.events]
    lines = demo.events_path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines if line.strip()] == reported
    assert reported[-1] == {"type": "run_status", "status": "completed"}
