"""Shared fixtures. Area fixtures live in tests/support/ and are registered here."""

from pathlib import Path

import pytest

(Path(__file__).resolve().parents[1] / "var").mkdir(exist_ok=True)  # the file test database

pytest_plugins: list[str] = [
    "devservers.mongo",
    "tests.support.live_server",
    "devservers.browser",
]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, with this process's SQLite WAL holder closed before the
    file is deleted (runs.db.sqlite_wal_hold), so no ``-wal``/``-shm`` file is left in var/."""
    yield
    from django.db import connections

    from runs import db

    # The holders are the server's for its whole life; only the tests delete the file.
    for holder in db._wal_holders.values():
        holder.close()
    db._wal_holders.clear()
    with django_db_blocker.unblock():
        connections.close_all()
