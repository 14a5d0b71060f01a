"""A real Daphne serving contextadmin on loopback, with its own file-backed SQLite database.

Register with ``pytest_plugins = ["tests.support.live_server"]``; the session fixture
``daphne_server`` yields a ``LiveServer``: ``.url``, ``.username`` / ``.password`` of a staff
superuser, and ``.manage(*args)`` to run management commands against the server's database.
Tests using it talk to another process's database: they need no ``django_db`` mark.
"""

from __future__ import annotations

import secrets
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devservers.migrated import database_migrate
from devservers.processes import Daphne, manage, server_env

START_TIMEOUT_S = 30.0


@dataclass
class LiveServer:
    daphne: Daphne
    env: dict[str, str]
    username: str
    password: str
    log_path: Path

    @property
    def url(self) -> str:
        return self.daphne.url

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a management command against the server's database (raises on failure)."""
        return manage(self.env, *args)

    def admin_page(self, context: Any, *, next: str) -> Any:
        """A page of ``context`` logged in as the server's operator, at ``next``; the page's
        script errors collect in ``page.page_errors``."""
        page = context.new_page()
        page.page_errors = []
        page.on("pageerror", lambda error: page.page_errors.append(str(error)))
        page.goto(f"{self.url}/admin/login/?next={next}")
        page.fill("#id_username", self.username)
        page.fill("#id_password", self.password)
        page.click("input[type=submit]")
        return page


def _wait_for_http(url: str, daphne: Daphne, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback http)
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if daphne.process is not None and daphne.process.poll() is not None:
            raise RuntimeError(f"daphne exited; see {log_path}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} not answering after {START_TIMEOUT_S}s; see {log_path}")
        time.sleep(0.1)


def live_server_run(workdir: Path, *, username: str, **extra_env: str) -> Iterator[LiveServer]:
    """Migrate a fresh SQLite file in ``workdir``, create a staff superuser and serve it with
    Daphne until the generator is closed; ``extra_env`` adds settings (e.g. review on)."""
    password = secrets.token_urlsafe(16)
    env = server_env(
        f"sqlite:///{workdir / 'db.sqlite3'}",
        DJANGO_DEBUG="1",  # Django serves the admin's static files
        MONGODB_URI="",
        DJANGO_SUPERUSER_USERNAME=username,
        DJANGO_SUPERUSER_PASSWORD=password,
        DJANGO_SUPERUSER_EMAIL=f"{username}@example.com",
        **extra_env,
    )
    database_migrate(env)
    manage(env, "createsuperuser", "--noinput")
    log_path = workdir / "daphne.log"
    daphne = Daphne(env, log_path).start()
    try:
        _wait_for_http(f"{daphne.url}/admin/login/", daphne, log_path)
        yield LiveServer(daphne, env, username, password, log_path)
    finally:
        daphne.stop()


@pytest.fixture(scope="session")
def daphne_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A fresh database with a staff superuser, served by Daphne for the session."""
    yield from live_server_run(tmp_path_factory.mktemp("daphne"), username="operator")
