"""Reads for runs: state at any seq (replay from the nearest snapshot), the log, summaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from runs.engine import RunState
from runs.errors import BadRequest, NotFound
from runs.models import Run, RunEvent, RunSnapshot

STATE_NAMESPACES = ("context", "nodes", "execution")


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


@dataclass
class StateAt:
    seq: int
    state: dict[str, Any]

    def as_response(self, run: Run) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "state": {k: self.state[k] for k in STATE_NAMESPACES},
            "provenance": run.provenance,
            "flips": self.state.get("flips", []),
        }


def run_state_at(*, run: Run, seq: int | None = None) -> StateAt:
    """Return the state after ``seq`` events (latest when None), replayed from the log."""
    if seq is None or seq == run.last_seq:
        return StateAt(seq=run.last_seq, state=run.state)
    if seq > run.last_seq:
        raise BadRequest(f"at: the run has {run.last_seq} events, got at={seq}")
    snapshot = RunSnapshot.objects.filter(run=run, seq__lte=seq).order_by("-seq").first()
    if snapshot is None:  # runs always have one at seq 0; be robust anyway
        raise NotFound(f"run {run.pk} has no snapshot to replay from")
    from runs.services import run_config

    state = RunState.from_dict(run_config(run), snapshot.state)
    payloads = RunEvent.objects.filter(run=run, seq__gt=snapshot.seq, seq__lte=seq).order_by("seq")
    for payload in payloads.values_list("payload", flat=True).iterator(chunk_size=500):
        state.apply(payload)
    return StateAt(seq=seq, state=state.to_dict())


def run_event_messages(*, run_id: str, after: int, limit: int = 500) -> list[tuple[int, str]]:
    """Return the wire messages of the events after ``after``, in order (for catch-up)."""
    from runs.services import _event_message

    events = RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit]
    return [(event.seq, _event_message(event)) for event in events]


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
