"""The periodic task: every WEBHOOKS_TICK_S a worker raises ``run_stale`` for newly stale
runs, sends any delivery still due (one whose task was lost with a killed worker), switches
off subscriptions failing for days, and forgets its own finished task rows and finished
deliveries older than RUNS_RETENTION_DAYS.

One chain of ticks stays scheduled however many workers there are: a tick claims the
``Tick`` row's ``next_at`` (one conditional UPDATE) and, in the same transaction, enqueues the
next tick; a tick that loses the claim does its work but schedules nothing. Each worker start
(``manage.py db_worker``, runs.webhooks' own) enqueues a tick, which revives a lost chain.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult

from runs.webhooks.models import Delivery, Tick
from runs.webhooks.services.delivery import (
    deliveries_drain,
    deliveries_send,
    subscriptions_failing_disable,
)
from runs.webhooks.services.stale import runs_stale_raise

logger = logging.getLogger(__name__)

TICK = "webhooks"
TASK_ROWS_KEEP = dt.timedelta(hours=1)  # finished task rows of ours older than this go


@task()
def webhooks_tick() -> int:
    """Schedule the next tick (if this one is the chain's), then do the periodic work."""
    tick_schedule()
    stale = runs_stale_raise()
    subscriptions_failing_disable()
    _task_rows_prune()
    deliveries_drain()
    return stale


def tick_schedule(*, now: dt.datetime | None = None) -> bool:
    """Claim the tick that is due and enqueue the next one, in one transaction."""
    now = now or timezone.now()
    next_at = now + dt.timedelta(seconds=settings.WEBHOOKS_TICK_S)
    with transaction.atomic():
        Tick.objects.get_or_create(name=TICK, defaults={"next_at": now})
        claimed = Tick.objects.filter(name=TICK, next_at__lte=now).update(next_at=next_at)
        if claimed:
            webhooks_tick.using(run_after=next_at).enqueue()
    return bool(claimed)


def tick_ensure() -> None:
    """Enqueue a tick now (a worker starting): it revives the chain if it was lost."""
    webhooks_tick.enqueue()


def _task_rows_prune() -> None:
    """Delete this app's finished task rows older than TASK_ROWS_KEEP (a tick every few
    seconds would otherwise grow the task table forever), the rows of tasks whose worker was
    killed (left "running"; ours never run that long), and finished deliveries older than
    RUNS_RETENTION_DAYS."""
    now = timezone.now()
    paths = [webhooks_tick.module_path, deliveries_send.module_path]
    ours = DBTaskResult.objects.filter(task_path__in=paths)
    ours.filter(finished_at__lt=now - TASK_ROWS_KEEP).delete()
    ours.filter(status=TaskResultStatus.RUNNING, started_at__lt=now - TASK_ROWS_KEEP).delete()
    Delivery.objects.filter(
        status__in=(Delivery.Status.DELIVERED, Delivery.Status.FAILED),
        finished_at__lt=now - dt.timedelta(days=settings.RUNS_RETENTION_DAYS),
    ).delete()
