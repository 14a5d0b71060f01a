"""One run as the caller may see it: the one 404 for a run it may not know of, its summary."""

from __future__ import annotations

from typing import Any

from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from contextadmin_sdk.engine.format import RUN_ID_MAX_CHARS, run_id_valid

from contextadmin.errors import BadRequest, NotFound
from runs.models import ApiToken, Run
from runs.state import run_flags
from runs.tokens import token_sees_workflow


def run_not_found(run_id: str) -> NotFound:
    """The one answer for a run the caller may not know of: unknown, malformed or foreign to
    the caller's token all read the same, so a scoped token learns nothing of other runs."""
    return NotFound(f"run_id: no run {run_id[:RUN_ID_MAX_CHARS + 1]!r}")


def run_get(*, run_id: str, token: ApiToken | None = None) -> Run:
    """Return a run or raise NotFound naming it; a token scoped to another workflow gets the
    same NotFound as for an unknown run (``token_sees_workflow``)."""
    if not run_id_valid(run_id):  # no run has such an id; never sent to SQL
        raise run_not_found(run_id)
    run = Run.objects.filter(pk=run_id).first()
    if run is None or not token_sees_workflow(token=token, workflow_name=run.workflow_name):
        raise run_not_found(run_id)
    return run


def run_exists(*, run_id: str) -> bool:
    """Whether the run is still stored (an open run page asks on each ping: prune_runs may
    have deleted it meanwhile); one primary-key look-up, no row loaded."""
    return run_id_valid(run_id) and Run.objects.filter(pk=run_id).exists()


def parse_seq(raw: str | None, *, name: str = "at") -> int | None:
    """Parse a ``?at=``/``?after=`` query value: None when absent, else a seq >= 0."""
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:  # not "¹" or "٣"
        raise BadRequest(f"{name}: must be a non-negative integer, got {raw[:40]!r}")
    return int(raw)


def run_identity(*, run: Run) -> dict[str, Any]:
    """What names a run and where it stands, as the summaries and the export header say it."""
    return {
        "id": run.pk,
        "workflow": run.workflow_name,
        "workflow_version": run.workflow_version,
        "enterprise_id": run.enterprise_id,
        "environment": run.environment,
        "status": run.status,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
    }


def run_summary(*, run: Run, flags: list[str] | None = None) -> dict[str, Any]:
    """Describe a run for lists and the runs socket.

    ``last_event_at`` is known when the run was read with ``runs_annotated`` (lists, the run
    page); the socket's summaries leave it None and the page takes the arrival time instead.
    ``flags`` (``run_flags``) saves reading the run's stored state when the caller has them.
    """
    last_event_at = getattr(run, "last_event_at", None)
    return {
        **run_identity(run=run),
        "event_count": run.last_seq,
        "flip_count": run.flip_count,
        "flags": run_flags(run.state.get("flips", [])) if flags is None else flags,
        "last_event_at": last_event_at.isoformat() if last_event_at else None,
        "ended_by": run_ended_by(run=run),
        "live": run.status not in RUN_ENDED_STATUSES,  # running or paused: the pages list it
    }


def run_ended_by(*, run: Run) -> str | None:
    """Say how an ended run ended: ``completed``, ``crash`` (failed) or ``cancelled``; None
    while it lives (running or paused). The page shows a crash differently from a completion."""
    if run.status not in RUN_ENDED_STATUSES:
        return None
    return "crash" if run.status == Run.Status.FAILED else run.status
