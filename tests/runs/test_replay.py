"""Time travel: the state rebuilt from the log at any seq equals the live state recorded then."""

from __future__ import annotations

import random

import pytest

from runs.models import Run, RunSnapshot
from runs.services import ingest, lifecycle
from runs.state import run_state_at
from tests.support.demo import demo_config

pytestmark = pytest.mark.django_db

AGENTS = ["InterviewAgent", "ContextVariablesAgent", "HandoffsAgent", "user"]


def generated_events(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    events = []
    for _ in range(count):
        kind = rng.choice(["agent_text"] * 6 + ["tool_response", "context_set"])
        if kind == "agent_text":
            events.append(
                {
                    "type": kind,
                    "agent": rng.choice(AGENTS),
                    "text": rng.choice(["hi", " next ", "NEXT", "ok"]),
                }
            )
        elif kind == "tool_response":
            events.append(
                {
                    "type": kind,
                    "agent": "ContextVariablesAgent",
                    "tool": rng.choice(["save", "load"]),
                    "status": rng.choice(["success", "error"]),
                    "data": {"n": rng.randint(0, 9)},
                }
            )
        else:
            # context_set may set only database (and, outside production, environment)
            # variables; derived flags flip by their triggers only
            # (sdk/contextadmin_sdk/engine/state.py).
            events.append(
                {"type": kind, "name": "concept_overview", "value": rng.choice(["a", "b", "c"])}
            )
    return events


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_state_at_every_seq_equals_the_live_state_then(generator, monkeypatch, seed):
    monkeypatch.setattr(ingest, "SNAPSHOT_EVERY", 7)
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    live = {0: run.state}
    for event in generated_events(60, seed):
        result = ingest.event_ingest(run_id=run.pk, events=[event])
        latest = run_state_at(run=Run.objects.get(pk=run.pk))
        assert latest.seq == result.last_seq
        live[result.last_seq] = latest.state
    run.refresh_from_db()
    assert RunSnapshot.objects.filter(run=run).count() == 1 + 60 // 7
    for seq, state in live.items():
        assert run_state_at(run=run, seq=seq).state == state, seq


def test_batches_and_single_events_give_the_same_final_state(generator):
    events = generated_events(120, 9)
    one = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    batched = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    for event in events:
        ingest.event_ingest(run_id=one.pk, events=[event])
    ingest.event_ingest(run_id=batched.pk, events=events[:50])
    ingest.event_ingest(run_id=batched.pk, events=events[50:])
    one.refresh_from_db()
    batched.refresh_from_db()
    assert run_state_at(run=one).state == run_state_at(run=batched).state
    assert one.flip_count == batched.flip_count


def test_the_demo_config_is_what_runs_pin(generator):
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    assert run.definitions == demo_config()


def test_impact_replays_the_recorded_runs_the_runs_app_registers(generator):
    """contextadmin.impact reads runs through the source RunsConfig.ready registers: each run's
    start context, its events in order and the definitions it pinned."""
    from contextadmin.impact import run_source

    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    events = generated_events(12, 4)
    ingest.event_ingest(run_id=run.pk, events=events)
    source = run_source()
    assert source is not None
    [(recorded, config)] = list(source(workflow_name="Generator", limit=5))
    assert recorded.run_id == run.pk and recorded.environment == "development"
    assert [e["seq"] for e in recorded.events] == list(range(1, 13))
    assert recorded.base_context["enterprise_id"] == "acme"
    assert config.context_variables.derived_variables[0].name == "interview_complete"
