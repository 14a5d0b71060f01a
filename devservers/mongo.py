"""A real MongoDB-wire server for tests: ``nx-27017`` on a free loopback port, seeded with the
demo documents, stopped at the end of the session.

Register with ``pytest_plugins = ["devservers.mongo"]``; use the ``mongo_server`` fixture
(``.uri``, ``.client``, ``.seed(documents)``).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient
from pymongo.errors import PyMongoError

from devservers.processes import process_stop

PROJECT = Path(__file__).resolve().parents[1]
DEMO_DOCUMENTS = PROJECT / "contextadmin" / "demo" / "mongo_documents.json"
START_TIMEOUT_S = 30.0


def free_port() -> int:
    """Return a TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def demo_documents() -> dict[str, Any]:
    """The Generator demo documents: ``{database: {collection: [document, ...]}}``."""
    documents: dict[str, Any] = json.loads(DEMO_DOCUMENTS.read_text())
    return documents


@dataclass
class MongoServer:
    """One nx-27017 process and a client connected to it."""

    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    client: MongoClient[dict[str, Any]] | None = None

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}"

    def start(self) -> MongoServer:
        binary = Path(sys.executable).parent / "nx-27017"
        log = self.workdir / "nx-27017.log"
        self.process = subprocess.Popen(
            [
                str(binary),
                "--data-dir",
                str(self.workdir / "data"),
                "--host",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--log-file",
                str(log),
                "--pid-file",
                str(self.workdir / "nx-27017.pid"),
            ],
            cwd=self.workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.client = MongoClient(self.uri, serverSelectionTimeoutMS=500)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"nx-27017 exited with {self.process.returncode}; see {log}")
            try:
                self.client.admin.command("ping")
                return self
            except PyMongoError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError(f"nx-27017 not answering on {self.uri}; see {log}") from None
                time.sleep(0.1)

    def seed(self, documents: Mapping[str, Mapping[str, list[dict[str, Any]]]]) -> None:
        """Replace the named collections' contents with ``documents``."""
        assert self.client is not None
        for database, collections in documents.items():
            for collection, docs in collections.items():
                self.client[database][collection].delete_many({})
                if docs:
                    self.client[database][collection].insert_many([dict(d) for d in docs])

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        process_stop(self.process)


@pytest.fixture(scope="session")
def mongo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MongoServer]:
    """A session-wide nx-27017 seeded with the demo documents."""
    server = MongoServer(tmp_path_factory.mktemp("nx-27017")).start()
    try:
        server.seed(demo_documents())
        yield server
    finally:
        server.stop()
