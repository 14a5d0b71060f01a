"""Stale runs: ``run_stale`` once per run silent for RUNS_STALE_AFTER_S, raised by the tick.

The rule is the inspector's (``static/inspector/lifecycle.js``: a *running* run whose last
event, or start, is older than the threshold), read with the runs list's own annotation.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from runs import selectors
from runs.models import Run
from runs.webhooks.models import StaleRun
from runs.webhooks.services.outbox import deliveries_write, subscriptions_for_workflow
from runs.webhooks.services.payloads import run_payload

STALE_BATCH = 200  # runs marked per transaction


def runs_stale_raise(*, now: dt.datetime | None = None) -> int:
    """Mark each newly stale run and write its ``run_stale`` deliveries; return how many."""
    now = now or timezone.now()
    after_s = selectors.run_stale_after_s()
    if not after_s:
        return 0
    cutoff = now - dt.timedelta(seconds=after_s)
    candidates = (
        selectors.runs_annotated(
            Run.objects.filter(status=Run.Status.RUNNING, started_at__lt=cutoff).exclude(
                pk__in=StaleRun.objects.values("run_id")
            )
        )
        .annotate(last_activity=Coalesce("last_event_at", "started_at"))
        .filter(Q(last_activity__lt=cutoff))
        .defer("definitions", "provenance", "warnings", "state")
        .order_by("pk")[:STALE_BATCH]
    )
    marked = 0
    with transaction.atomic():
        for run in candidates:
            _, created = StaleRun.objects.get_or_create(run=run)
            if not created:
                continue
            marked += 1
            subscriptions = subscriptions_for_workflow(run.workflow_id)
            if subscriptions:
                last = run.last_activity
                payload = run_payload(
                    run,
                    event="run_stale",
                    seq=run.last_seq,
                    last_event_at=last.isoformat() if last else None,
                    stale_after_s=after_s,
                )
                deliveries_write(
                    subscriptions=subscriptions, lane=run.pk, items=[("run_stale", payload)]
                )
    return marked
