"""A run's state has a budget (sdk/contextadmin_sdk/engine/state.py, limits in
sdk/contextadmin_sdk/engine/format/limits.py): node
outputs beyond a size are kept as previews (the full output stays in the event log), the
distinct nodes and the hand-off path are bounded, replay still equals the live state, and the
per-process live-state cache is bounded in bytes."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from contextadmin_sdk.engine import RunState, replay, resolve
from contextadmin_sdk.engine.format import (
    NODE_DATA_MAX_BYTES,
    NODE_TEXT_MAX_CHARS,
    PATH_MAX_EDGES,
    STATE_MAX_NODES,
)
from contextadmin_sdk.engine.state import node_output

from runs.models import Run, RunEvent
from runs.state import caches, run_state_at
from tests.runs.conftest import Api, demo_config

BASE = {"enterprise_id": "acme", "workflow_name": "Generator"}
BIG = "x" * 100_000
TEXT = "x" * 99_000

OUTPUTS = [  # (event, what nodes keeps)
    ({"type": "agent_text", "agent": "a", "text": "short"}, {"text": "short"}),
    ({"type": "agent_text", "agent": "a", "text": "y" * NODE_TEXT_MAX_CHARS},
     {"text": "y" * NODE_TEXT_MAX_CHARS}),
    ({"type": "agent_text", "agent": "a", "text": "y" * (NODE_TEXT_MAX_CHARS + 1)},
     {"text": "y" * NODE_TEXT_MAX_CHARS, "truncated": True, "chars": NODE_TEXT_MAX_CHARS + 1,
      "seq": 7}),
    ({"type": "agent_text", "agent": "a", "text": BIG},
     {"text": BIG[:NODE_TEXT_MAX_CHARS], "truncated": True, "chars": 100_000, "seq": 7}),
    ({"type": "tool_response", "tool": "t", "status": "success"}, {"status": "success"}),
    ({"type": "tool_response", "tool": "t", "data": {"saved": 1}}, {"saved": 1}),
    ({"type": "tool_response", "tool": "t", "data": [1, 2]}, [1, 2]),
    ({"type": "tool_response", "tool": "t", "data": {"blob": BIG}},
     {"preview": json.dumps({"blob": BIG}, separators=(",", ":"))[:NODE_DATA_MAX_BYTES],
      "truncated": True, "bytes": 100_011, "seq": 7}),
]


@pytest.mark.parametrize(("event", "kept"), OUTPUTS, ids=range(len(OUTPUTS)))
def test_node_outputs_beyond_the_budget_are_previews(event, kept):
    assert node_output(event, 7) == kept
    state = RunState(demo_config(), BASE)
    for _ in range(6):
        state.apply({"type": "agent_text", "agent": "other", "text": "."})
    state.apply(event)
    name = event.get("agent") or event["tool"]
    assert state.nodes[name] == kept
    if isinstance(kept, dict) and kept.get("truncated"):
        # {{node.text}} resolves to the preview, and says it is one; the full text is in the log
        if "text" in kept:
            assert resolve(f"{{{{{name}.text}}}}", variables={}, node_outputs=state.nodes).text \
                == kept["text"]
        assert resolve(f"{{{{{name}.truncated}}}}", variables={},
                       node_outputs=state.nodes).text == "true"


def _many_agents(count: int, text: str) -> list[dict[str, Any]]:
    return [{"type": "agent_text", "agent": f"agent_{i}", "text": text} for i in range(count)]


def test_300_agents_with_100_kb_texts_make_a_small_state_equal_to_its_replay():
    events = _many_agents(300, BIG)
    live = RunState(demo_config(), BASE)
    for event in events:
        live.apply(event)
    size = len(orjson.dumps(live.to_dict()))
    assert size < 300 * (NODE_TEXT_MAX_CHARS + 200) + 50_000, size  # was 30 MB
    assert replay(demo_config(), BASE, events).to_dict() == live.to_dict()


def test_distinct_nodes_and_the_path_are_bounded():
    state = RunState(demo_config(), BASE)
    for event in _many_agents(STATE_MAX_NODES, "hi"):
        state.apply(event)
    for event, field in [
        ({"type": "agent_text", "agent": "one_more", "text": "hi"}, "agent"),
        ({"type": "tool_response", "tool": "one_more", "status": "success"}, "tool"),
        ({"type": "handoff", "agent": "agent_0", "target": "one_more"}, "target"),
    ]:
        problems = state.problems(event)
        assert problems and problems[0].startswith(f"{field}: the run already tracks"), problems
        assert "STATE_MAX_NODES" in problems[0]
    state.apply({"type": "agent_text", "agent": "agent_1", "text": "known agents still talk"})
    for i in range(PATH_MAX_EDGES + 50):
        state.apply({"type": "handoff", "agent": f"agent_{i % 2}", "target": f"agent_{1 - i % 2}"})
    path = state.get("execution.path")
    assert len(path) == PATH_MAX_EDGES and path[-1]["seq"] == state.last_seq
    assert path[0]["seq"] == state.last_seq - PATH_MAX_EDGES + 1


@pytest.mark.django_db
def test_the_stored_state_stays_small_and_the_log_keeps_every_full_text(api: Api):
    run_id = api.start()["run_id"]
    for start in range(0, 300, 5):  # bodies within DATA_UPLOAD_MAX_MEMORY_SIZE
        events = [{"type": "agent_text", "agent": f"agent_{i}", "text": f"{i}:" + TEXT}
                  for i in range(start, start + 5)]
        assert api.events(run_id, events).status_code == 200
    run = Run.objects.get(pk=run_id)
    latest = run_state_at(run=run).state
    assert len(orjson.dumps(latest)) < 500_000
    assert latest["nodes"]["agent_7"]["truncated"] is True
    assert RunEvent.objects.get(run_id=run_id, seq=8).payload["text"] == "7:" + TEXT
    state = api.get(f"/api/runs/{run_id}/state/?at=150").json()["state"]
    assert state["nodes"]["agent_149"] == {"text": ("149:" + TEXT)[:NODE_TEXT_MAX_CHARS],
                                           "truncated": True, "chars": 99_004, "seq": 150}


def test_the_live_state_cache_is_bounded_in_bytes(monkeypatch):
    monkeypatch.setattr(caches, "LIVE_STATES_MAX_BYTES", 10_000)
    monkeypatch.setattr(caches, "_live_states", {})
    monkeypatch.setattr(caches, "_live_bytes", 0)

    class FakeRun:
        def __init__(self, pk: str) -> None:
            self.pk, self.started_at, self.last_seq, self.definitions_hash = pk, 0, 1, "h"

    for i in range(10):
        live = caches.LiveState(state=None, stored_seq=0, size=3_000)  # type: ignore[arg-type]
        caches.live_state_keep(FakeRun(f"r{i}"), live)  # type: ignore[arg-type]
        assert caches._live_bytes <= 10_000
    assert list(caches._live_states) == ["r7", "r8", "r9"]  # the least recently kept left
    huge = caches.LiveState(state=None, stored_seq=0, size=10_001)  # type: ignore[arg-type]
    caches.live_state_keep(FakeRun("huge"), huge)  # type: ignore[arg-type]
    assert "huge" not in caches._live_states and caches._live_bytes == 9_000
