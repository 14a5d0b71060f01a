"""Retention: the runs ``prune_runs`` would delete."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from django.db.models import Count, QuerySet, Sum

from runs.models import Run


# -- retention: what prune_runs would delete ------------------------------------------------------
def runs_ended_before(*, cutoff: dt.datetime) -> QuerySet[Run]:
    """Runs that ended before ``cutoff``: the only runs retention may delete (a running run,
    however old, is never among them; an ended run takes no more events)."""
    return Run.objects.filter(status__in=RUN_ENDED_STATUSES, ended_at__lt=cutoff)


@dataclass
class PrunePlan:
    runs: int
    events: int
    flips: int


def prune_plan(*, cutoff: dt.datetime) -> PrunePlan:
    """Count what pruning at ``cutoff`` deletes (one query: a run's counters, not its log)."""
    totals = runs_ended_before(cutoff=cutoff).aggregate(
        runs=Count("pk"), events=Sum("last_seq"), flips=Sum("flip_count")
    )
    return PrunePlan(
        runs=totals["runs"] or 0, events=totals["events"] or 0, flips=totals["flips"] or 0
    )
