"""Fixtures for the inspector: a real Daphne on a file SQLite database, and Debian Chromium.

The server runs in a subprocess (migrate, demo_setup, a staff user, an API token), so the sync
Playwright tests need no Django database and no event loop of their own.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from contextadmin_sdk.client import RunReporter

from devservers.migrated import database_migrate
from devservers.processes import PROJECT, Daphne, manage, server_env
from tests.support.demo import demo_config

OUTPUT = PROJECT / "test-output"
STAFF = ("inspector", "inspector-pw-8472")
ROUTED_HANDOFFS = [
    {
        "source_agent": "InterviewAgent",
        "target_agent": "ContextVariablesAgent",
        "condition": "${interview_complete}",
        "description": "once the interview is done",
    },
    {
        "source_agent": "ContextVariablesAgent",
        "target_agent": "HandoffsAgent",
        "condition": "${context_aware} and ${interview_complete}",
        "description": "",
    },
    {
        "source_agent": "InterviewAgent",
        "target_agent": "HandoffsAgent",
        "condition": "${context_aware}",
        "description": "skip ahead when context-aware",
    },
]


@dataclass
class LiveServer:
    url: str
    env: dict[str, str]
    secret: str
    workdir: Path

    def reporter(self, workflow: str = "Generator", **start: Any) -> RunReporter:
        """Start a run over HTTP and return its reporter (one event per request)."""
        reporter = RunReporter(self.url, self.secret, batch_size=1, retries=2)
        reporter.start(workflow=workflow, enterprise_id=start.pop("enterprise_id", "acme"), **start)
        return reporter

    def run_exists(self, run_id: str) -> bool:
        request = urllib.request.Request(  # noqa: S310  (our own loopback server)
            f"{self.url}/api/runs/{run_id}/state/",
            headers={"Authorization": f"Bearer {self.secret}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5):  # noqa: S310
                return True
        except OSError:
            return False


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory, mongo_server: Any) -> Iterator[LiveServer]:
    """Daphne serving contextadmin with the demo workflow, nx-27017 as its MongoDB."""
    workdir = tmp_path_factory.mktemp("inspector-server")
    env = server_env(f"sqlite:///{workdir / 'db.sqlite3'}", MONGODB_URI=mongo_server.uri)
    env.pop("CONTEXT_AWARE", None)
    env.pop("MONETIZATION_ENABLED", None)
    env.pop("ENVIRONMENT", None)
    database_migrate(env)
    manage(env, "demo_setup")
    routed = workdir / "routed.json"
    routed.write_text(json.dumps({**demo_config(), "handoffs": ROUTED_HANDOFFS}))
    manage(env, "import_context", str(routed), "--workflow", "Routed")
    user, password = STAFF
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_user({user!r}, password={password!r}, is_staff=True)",
    )
    secret = manage(env, "create_api_token", "inspector-tests").stdout.strip().splitlines()[-1]
    daphne = Daphne(env=env, log_path=workdir / "daphne.log").start()
    try:
        yield LiveServer(url=daphne.url, env=env, secret=secret, workdir=workdir)
    finally:
        daphne.stop()


@pytest.fixture(scope="session")
def staff_state(chromium: Any, live: LiveServer) -> dict[str, Any]:
    """Log in once through the admin login form; later pages reuse the session cookie."""
    context = chromium.new_context(base_url=live.url)
    page = context.new_page()
    page.goto("/runs/")
    page.fill("#id_username", STAFF[0])
    page.fill("#id_password", STAFF[1])
    page.click("input[type=submit]")
    page.wait_for_url(f"{live.url}/runs/")
    state: dict[str, Any] = context.storage_state()
    context.close()
    return state


class PageErrors(list):
    """Uncaught errors of the page's scripts; a test fails when any occurred."""


@pytest.fixture
def page(chromium: Any, live: LiveServer, staff_state: dict[str, Any]) -> Iterator[Any]:
    """A logged-in staff page at 1280x900."""
    context = chromium.new_context(
        base_url=live.url, storage_state=staff_state, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors = PageErrors()
    page.on("pageerror", lambda error: errors.append(error))
    page.errors = errors
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def anonymous_page(chromium: Any, live: LiveServer) -> Iterator[Any]:
    context = chromium.new_context(base_url=live.url)
    page = context.new_page()
    yield page
    context.close()


def wait_until(predicate: Any, *, timeout: float = 15.0, message: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(0.05)


@pytest.fixture
def staff(client: Any, django_user_model: Any) -> Any:
    """The Django test client, logged in as a staff user (the staff-only pages and endpoints)."""
    user = django_user_model.objects.create_user("staff", password="pw-12345678", is_staff=True)
    client.force_login(user)
    return client
