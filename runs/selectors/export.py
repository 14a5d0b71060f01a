"""A run's log as exported: its header and its events page by page."""

from __future__ import annotations

import datetime as dt
from typing import Any

from runs.models import Run, RunEvent, RunSnapshot
from runs.selectors.run import run_identity
from runs.selectors.runs_list import run_last_event_at

# -- export: a run's log, page by page --------------------------------------------------------
EXPORT_CHUNK = 1000


def run_events_chunk(*, run_id: str, after: int, limit: int = EXPORT_CHUNK) -> list[dict[str, Any]]:
    """Return up to ``limit`` stored events after seq ``after``, in order (one indexed query).

    Each payload already holds its ``seq``; the export streams these chunks one at a time, so
    its memory does not grow with the run.
    """
    payloads = (
        RunEvent.objects.filter(run_id=run_id, seq__gt=after)
        .order_by("seq")
        .values_list("payload", flat=True)[:limit]
    )
    return list(payloads)


def run_export_header(*, run: Run) -> dict[str, Any]:
    """The first line of a run's JSONL export: what ``import_run`` needs to rebuild it exactly
    (the pinned definitions, the state at seq 0, provenance and warnings). ``simulate_run``
    skips it: a line without ``type`` is not an event."""
    initial = RunSnapshot.objects.filter(run=run, seq=0).values_list("state", flat=True).first()
    return {
        "run": {
            **run_identity(run=run),
            "last_event_at": _isoformat(run_last_event_at(run=run)),
            "last_seq": run.last_seq,
            "definitions": run.definitions,
            "runtime": run.runtime,
            "provenance": run.provenance,
            "warnings": run.warnings,
            "initial_state": initial,
        }
    }


def _isoformat(moment: dt.datetime | None) -> str | None:
    return moment.isoformat() if moment else None
