from django.apps import AppConfig
from django.db.backends.signals import connection_created

from contextadmin.impact import run_source_register
from contextadmin.recent_runs import runs_by_version_register
from runs.db import sqlite_wal_hold


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Runs"

    def ready(self) -> None:
        # Needs the app registry (it reads the models), so imported here, as Django documents.
        from runs.selectors import recorded_runs, workflow_runs_by_version
        from runs.services.broadcast import run_events_committed
        from runs.signals import events_committed

        connection_created.connect(sqlite_wal_hold, dispatch_uid="runs.db.sqlite_wal_hold")
        events_committed.connect(run_events_committed, dispatch_uid="runs.broadcast")
        run_source_register(recorded_runs)  # contextadmin.impact replays the recorded runs
        runs_by_version_register(workflow_runs_by_version)  # the workflow page lists them
