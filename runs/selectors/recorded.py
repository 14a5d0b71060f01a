"""What the definitions app reads of runs, handed over in ``RunsConfig.ready``: recorded runs
for impact analysis, and a workflow's recent runs per version."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode

from contextadmin_sdk.engine.format import ContextVariablesFile
from django.db.models import Count, F, Q, Window
from django.db.models.functions import RowNumber
from django.urls import reverse

from contextadmin.impact import RecordedRun
from contextadmin.models import Workflow
from contextadmin.recent_runs import RunLink, VersionRuns, WorkflowRuns
from runs.models import Run, RunEvent, RunSnapshot
from runs.state import run_config


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
            version=run.workflow_version,
        )
        yield recorded, run_config(run)


# -- runs per version: the workflow page (contextadmin.recent_runs, registered in ready) -------
def run_published_version(*, run: Run) -> int | None:
    """Return the number of the version the run's workflow publishes now (one query; None
    when it has none or the workflow is gone), for the run page's "outdated" badge."""
    if run.workflow_id is None:
        return None
    published = Workflow.objects.filter(pk=run.workflow_id).values_list(
        "published_version__number", flat=True
    )
    return published.first()


def workflow_runs_by_version(
    *, workflow_name: str, versions: int, per_version: int
) -> WorkflowRuns:
    """Return the newest ``per_version`` runs of each of the newest ``versions`` versions that
    have runs, with each version's run count (two queries, whatever the number of runs)."""
    runs = Run.objects.filter(workflow_name=workflow_name)
    counts = list(
        runs.values("workflow_version")
        .annotate(count=Count("pk"))
        .order_by(F("workflow_version").desc(nulls_last=True))[:versions]
    )
    numbers = [row["workflow_version"] for row in counts]
    wanted = Q(workflow_version__in=[n for n in numbers if n is not None])
    if None in numbers:
        wanted |= Q(workflow_version__isnull=True)
    newest = (
        runs.filter(wanted)
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=[F("workflow_version")],
                order_by=[F("started_at").desc(), F("pk").desc()],
            )
        )
        .filter(rank__lte=per_version)
        .order_by("-started_at", "-pk")
        .values_list(
            "pk", "workflow_version", "status", "environment", "enterprise_id", "started_at"
        )
    )
    listed: dict[int | None, list[RunLink]] = {number: [] for number in numbers}
    for pk, number, status, environment, enterprise_id, started_at in newest if numbers else []:
        listed[number].append(
            RunLink(
                run_id=pk,
                url=reverse("runs-detail", args=[pk]),
                status=status,
                environment=environment,
                enterprise_id=enterprise_id,
                started_at=started_at,
            )
        )
    return WorkflowRuns(
        versions=[
            VersionRuns(
                version=row["workflow_version"],
                count=row["count"],
                runs=listed[row["workflow_version"]],
            )
            for row in counts
        ],
        list_url=f"{reverse('runs-list')}?{urlencode({'workflow': workflow_name})}",
    )
