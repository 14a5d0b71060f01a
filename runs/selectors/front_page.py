"""The front page: workflows with their published version and last run, runs live now, recent
changes and the first-run checklist."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from django.db.models import F, OuterRef, Subquery

from contextadmin import selectors as definitions
from contextadmin.models import Workflow, WorkflowVersion
from runs.models import ApiToken, Run
from runs.selectors.runs_list import runs_annotated


# -- the front page -----------------------------------------------------------------------------
@dataclass
class WorkflowRow:
    pk: int
    name: str
    description: str
    published: int | None  # the published version's number
    head: int | None  # the newest version's number (a draft when newer than published)
    last_run_id: str | None
    last_run_status: str | None
    last_run_started_at: dt.datetime | None


def workflow_rows() -> list[WorkflowRow]:
    """Each workflow with its published and newest version and its last run (one query)."""
    last_run = Run.objects.filter(workflow_name=OuterRef("name")).order_by("-started_at", "-pk")
    head = WorkflowVersion.objects.filter(workflow=OuterRef("pk")).order_by("-number")
    rows = (
        Workflow.objects.order_by("name")
        .annotate(
            # the workflow's own pointer (set only when a version is published); a subquery
            # on WorkflowVersion would join its default ordering's workflow and read another's
            published_number=F("published_version__number"),
            head_number=Subquery(head.values("number")[:1]),
            last_run_id=Subquery(last_run.values("pk")[:1]),
            last_run_status=Subquery(last_run.values("status")[:1]),
            last_run_started_at=Subquery(last_run.values("started_at")[:1]),
        )
        .values(
            "pk",
            "name",
            "description",
            "published_number",
            "head_number",
            "last_run_id",
            "last_run_status",
            "last_run_started_at",
        )
    )
    return [
        WorkflowRow(
            pk=row["pk"],
            name=row["name"],
            description=row["description"],
            published=row["published_number"],
            head=row["head_number"],
            last_run_id=row["last_run_id"],
            last_run_status=row["last_run_status"],
            last_run_started_at=row["last_run_started_at"],
        )
        for row in rows
    ]


def workflow_last_runs(*, rows: list[WorkflowRow]) -> list[dict[str, str | None]]:
    """Each workflow's last run as the front page's re-read sends it (its "Last run" cells)."""
    return [
        {
            "workflow": row.name,
            "id": row.last_run_id,
            "status": row.last_run_status,
            "started_at": row.last_run_started_at.isoformat(),
        }
        for row in rows
        if row.last_run_id and row.last_run_started_at
    ]


LIVE_SHOWN = 20  # the front page's *live now* lists this many; a line says how many more


def runs_live(*, limit: int = LIVE_SHOWN) -> list[Run]:
    """Return the live runs (running or paused), newest first (the front page's *live now*)."""
    runs = Run.objects.exclude(status__in=RUN_ENDED_STATUSES).defer("definitions", "provenance")
    return list(runs_annotated(runs).order_by("-started_at", "-pk")[:limit])


def runs_live_count() -> int:
    """How many runs are live (running or paused): the front page says how many it leaves out."""
    return Run.objects.exclude(status__in=RUN_ENDED_STATUSES).count()


def recent_changes(*, limit: int = 8) -> list[WorkflowVersion]:
    """Return the newest versions across workflows (contextadmin's audit trail)."""
    return definitions.recent_changes(limit=limit)


@dataclass
class Checklist:
    token: bool  # a live API token exists
    run: bool  # a runtime has started a run
    watched: bool  # a run has ended (completed, failed or cancelled)

    @property
    def done(self) -> bool:
        return self.token and self.run and self.watched


def first_run_checklist() -> Checklist:
    """Tell which first-run steps are done (three EXISTS queries)."""
    return Checklist(
        token=ApiToken.objects.filter(revoked=False).exists(),
        run=Run.objects.exists(),
        watched=Run.objects.filter(status__in=RUN_ENDED_STATUSES).exists(),
    )
