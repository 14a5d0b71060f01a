"""Fixtures for the fault tests: real Daphne processes over a seeded database.

``sqlite_stack`` copies a database seeded once per session (migrations, the demo workflow, a
token, a staff session), so each test starts from a fresh file in a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devservers.postgres import Postgres
from devservers.processes import server_env
from tests.reliability.helpers import Credentials, Stack, copy_sqlite, seed


@pytest.fixture(scope="session")
def seeded_sqlite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Credentials]:
    path = tmp_path_factory.mktemp("reliability-seed") / "seed.sqlite3"
    credentials = seed(server_env(f"sqlite:///{path}", MONGODB_URI=""))
    return path, credentials


@pytest.fixture
def sqlite_stack(seeded_sqlite: tuple[Path, Credentials], tmp_path: Path) -> Iterator[Stack]:
    """A fresh copy of the seeded SQLite database; Daphnes started on it are stopped after."""
    template, credentials = seeded_sqlite
    database = tmp_path / "db.sqlite3"
    copy_sqlite(template, database)
    stack = Stack(tmp_path, server_env(f"sqlite:///{database}", MONGODB_URI=""), credentials)
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL cluster from Debian's binaries on a free loopback port (see postgres.py)."""
    server = Postgres().start()
    try:
        yield server
    finally:
        server.stop()
