"""A test run leaves nothing of its SQLite test database behind: not the file, not its
``-wal``/``-shm`` (the WAL holder of runs.db kept them alive until tests/conftest.py closed it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from devservers.processes import PROJECT

A_DATABASE_TEST = "tests/runs/test_api.py::test_tokens_are_stored_hashed"


def test_a_test_run_removes_its_database_and_wal_files(tmp_path: Path) -> None:
    database = tmp_path / "test.sqlite3"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}  # SQLite, the default
    env["DJANGO_TEST_DATABASE"] = str(database)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", A_DATABASE_TEST],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []
