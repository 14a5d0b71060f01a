"""Reads for runs: state at any seq (replay from the nearest snapshot), the log and its wire
messages, summaries. Nothing here writes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from django.db.models import QuerySet

from contextadmin.impact import RecordedRun
from runs.engine import RunState, event_sender, handoffs_readiness
from runs.engine.format import ContextVariablesFile
from runs.engine.state import NAMESPACES
from runs.errors import BadRequest, NotFound
from runs.models import Run, RunEvent, RunSnapshot
from runs.services.caches import run_config

CATCH_UP_CHUNK = 500


def json_text(data: Any) -> str:
    """Serialize once for the wire (orjson: fast, and it refuses NaN)."""
    return orjson.dumps(data).decode()


def run_get(*, run_id: str) -> Run:
    """Return a run or raise NotFound naming it."""
    if "\x00" in run_id:  # no run has one, and PostgreSQL cannot even compare it
        raise NotFound(f"run_id: no run {run_id!r}")
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"run_id: no run {run_id!r}")
    return run


def parse_seq(raw: str | None, *, name: str = "at") -> int | None:
    """Parse a ``?at=``/``?after=`` query value: None when absent, else a seq >= 0."""
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or len(raw) > 18:
        raise BadRequest(f"{name}: must be a non-negative integer, got {raw[:40]!r}")
    return int(raw)


def handoffs_now(config: ContextVariablesFile, context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each hand-off rule with whether it holds in this context (the engine decides)."""
    return handoffs_readiness(config, context) if config.handoffs else []


@dataclass
class StateAt:
    seq: int
    state: dict[str, Any]

    def as_response(self, run: Run) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "state": {k: self.state[k] for k in NAMESPACES},
            "provenance": run.provenance,
            "flips": self.state.get("flips", []),
            "handoffs": handoffs_now(run_config(run), self.state["context"]),
        }


def run_state_at(*, run: Run, seq: int | None = None) -> StateAt:
    """Return the state after ``seq`` events (latest when None), replayed from the log."""
    if seq is None or seq == run.last_seq:
        return StateAt(seq=run.last_seq, state=run.state)
    return StateAt(seq=seq, state=_state_replayed(run=run, seq=seq).to_dict())


def run_snapshot(*, run_id: str, after: int | None) -> dict[str, Any]:
    """The inspector's first message: the state as of ``after`` (latest when None), the
    hand-off readiness then, and the run's summary."""
    run = run_get(run_id=run_id)
    state = run_state_at(run=run, seq=after).as_response(run)
    return {"type": "snapshot", **state, "run": run_summary(run=run)}


def _state_replayed(*, run: Run, seq: int) -> RunState:
    """The run's state after ``seq`` events: its nearest snapshot, then the log after it."""
    if seq > run.last_seq:
        raise BadRequest(f"at: the run has {run.last_seq} events, got at={seq}")
    if seq == run.last_seq:
        return RunState.from_dict(run_config(run), run.state)
    snapshot = RunSnapshot.objects.filter(run=run, seq__lte=seq).order_by("-seq").first()
    if snapshot is None:  # runs always have one at seq 0; be robust anyway
        raise NotFound(f"run {run.pk} has no snapshot to replay from")
    state = RunState.from_dict(run_config(run), snapshot.state)
    payloads = RunEvent.objects.filter(run=run, seq__gt=snapshot.seq, seq__lte=seq).order_by("seq")
    for payload in payloads.values_list("payload", flat=True).iterator(chunk_size=500):
        state.apply(payload)
    return state


def event_message(
    *,
    seq: int,
    event: Mapping[str, Any],
    result: Mapping[str, Any],
    handoffs: list[dict[str, Any]],
) -> str:
    """The inspector's wire message for one stored event (live and catch-up alike)."""
    return json_text(
        {
            "type": "event",
            "seq": seq,
            "event": event,
            "agent": event_sender(event),
            "flips": result.get("flips", []),
            "changes": result.get("changes", {}),
            "handoffs": handoffs,
        }
    )


def run_event_messages(
    *, run_id: str, after: int, limit: int = CATCH_UP_CHUNK
) -> list[tuple[int, str]]:
    """Return the wire messages of the events after ``after``, in order (for catch-up).

    Each message carries the hand-off readiness after its event, so the log is replayed from
    the state at ``after``: the same messages the live broadcast sent.
    """
    events = list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])
    if not events:
        return []
    run = run_get(run_id=run_id)
    config = run_config(run)
    state = _state_replayed(run=run, seq=after)
    messages = []
    for event in events:
        state.apply(event.payload)
        handoffs = handoffs_now(config, state.context)
        text = event_message(seq=event.seq, event=event.payload, result=event.result,
                             handoffs=handoffs)
        messages.append((event.seq, text))
    return messages


def run_summary(*, run: Run) -> dict[str, Any]:
    """Describe a run for lists and the runs socket."""
    return {
        "id": run.pk,
        "workflow": run.workflow_name,
        "enterprise_id": run.enterprise_id,
        "environment": run.environment,
        "status": run.status,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "event_count": run.last_seq,
        "flip_count": run.flip_count,
        "flags": sorted({f["name"] for f in run.state.get("flips", []) if f.get("value") is True}),
    }


RUN_FILTERS = ("workflow", "status", "enterprise_id", "environment")


def run_list(*, filters: dict[str, str] | None = None, limit: int = 200) -> QuerySet[Run]:
    """Return runs, newest first, filtered by workflow, status, enterprise and environment."""
    runs = Run.objects.all().defer("definitions", "provenance")
    for key, value in (filters or {}).items():
        if key in RUN_FILTERS and value:
            runs = runs.filter(**{"workflow_name" if key == "workflow" else key: value})
    return runs[:limit]


def run_workflow_names() -> list[str]:
    """Return the workflow names that have runs, for the runs list's filter."""
    names = Run.objects.order_by("workflow_name").values_list("workflow_name", flat=True)
    return list(names.distinct())


# -- recorded runs, for contextadmin.impact (registered in RunsConfig.ready) -------------------
def recorded_runs(
    *, workflow_name: str, limit: int
) -> Iterator[tuple[RecordedRun, ContextVariablesFile]]:
    """Yield up to ``limit`` of a workflow's runs, newest first, each with its start context,
    its events (read lazily, in seq order) and the definitions it pinned."""
    runs = Run.objects.filter(workflow_name=workflow_name).order_by("-started_at")[:limit]
    for run in runs.iterator(chunk_size=50):
        start = RunSnapshot.objects.filter(run=run, seq=0).values_list("state", flat=True).first()
        events = (
            RunEvent.objects.filter(run=run)
            .order_by("seq")
            .values_list("payload", flat=True)
            .iterator(chunk_size=500)
        )
        recorded = RecordedRun(
            run_id=run.pk,
            base_context=(start or {}).get("context", {}),
            events=events,
            environment=run.environment,
        )
        yield recorded, run_config(run)
