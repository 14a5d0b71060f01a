"""manage.py db_worker: django-tasks-db's worker, which first enqueues the webhooks' periodic
tick (``runs.webhooks.services.tick``), so a worker start revives a lost schedule.

Overrides django_tasks_db's command of the same name (Django takes the command of the app
listed first in INSTALLED_APPS: runs.webhooks comes before django_tasks_db). Only the public
``Command.handle`` is extended; tests/runs/webhooks/test_worker.py fails if that moves.
"""

from __future__ import annotations

from typing import Any

from django_tasks_db.management.commands import db_worker

from runs.webhooks.services.tick import tick_ensure


class Command(db_worker.Command):
    help = "Run a database background worker (webhooks, stale runs): django-tasks-db's worker"

    def handle(self, *args: Any, **options: Any) -> None:
        tick_ensure()
        super().handle(*args, **options)
