"""A real ``manage.py db_worker`` process for the tests, beside real Daphnes."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devservers.processes import PROJECT, process_start, process_stop

# Scaled down for tests: backoff, lease (2 x the timeouts), tick; loopback receivers allowed.
WORKER_ENV = {
    "WEBHOOKS_ALLOW_HTTP": "1",
    "WEBHOOKS_ALLOW_PRIVATE": "1",
    "WEBHOOKS_CONNECT_TIMEOUT_S": "0.5",
    "WEBHOOKS_READ_TIMEOUT_S": "1",
    "WEBHOOKS_BACKOFF_BASE_S": "0.1",
    "WEBHOOKS_TICK_S": "0.3",
}


@dataclass
class Worker:
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Worker:
        self.process = process_start(
            [
                sys.executable, str(PROJECT / "manage.py"), "db_worker", "--no-reload",
                "--no-startup-delay", "--interval", "0.05", "--queue-name", "*",
            ],
            env=self.env, cwd=PROJECT, log_path=self.log_path,
        )
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        process_stop(self.process, sig=sig)

    def stop(self) -> None:
        process_stop(self.process)


def deliveries(database: Path) -> list[dict[str, Any]]:
    """The outbox as stored, oldest first."""
    with sqlite3.connect(database) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute(
            "SELECT event, message_id, status, attempts, lane FROM webhooks_delivery ORDER BY id"
        ).fetchall()
    db.close()
    return [dict(row) for row in rows]
