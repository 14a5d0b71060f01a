from django.apps import AppConfig
from django.db.backends.signals import connection_created

from runs.db import sqlite_wal_hold


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Runs"

    def ready(self) -> None:
        connection_created.connect(sqlite_wal_hold, dispatch_uid="runs.db.sqlite_wal_hold")
