"""Websocket paths on a real Daphne: an unknown path or a malformed run id is refused at the
handshake (no 500, no traceback, nothing above INFO in the server's log), before
authentication, a database read or a channel-layer group name."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from devservers.migrated import database_migrate
from devservers.processes import Daphne, manage, server_env
from tests.runs.conftest import demo_config

pytestmark = pytest.mark.slow


@dataclass
class Site:
    daphne: Daphne
    env: dict[str, str]
    log: Path
    session: str
    run_id: str


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("socket-paths")
    env = server_env(
        f"sqlite:///{workdir / 'db.sqlite3'}",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_LOG_LEVEL="INFO",
        MONGODB_URI="",
    )
    database_migrate(env)
    config = workdir / "context_variables.json"
    config.write_text(json.dumps(demo_config()))
    manage(env, "import_context", str(config), "--workflow", "Generator")
    script = (
        "from django.contrib.auth import get_user_model; from django.test import Client; "
        "from runs.services.lifecycle import run_start; "
        "u=get_user_model().objects.create_user('op', password='pw-12345678', is_staff=True); "
        "c=Client(); c.force_login(u); print(c.cookies['sessionid'].value); "
        "print(run_start(workflow_name='Generator', enterprise_id='acme').run.pk)"
    )
    session, run_id = manage(env, "shell", "-c", script).stdout.strip().splitlines()[-2:]
    log = workdir / "daphne.log"
    daphne = Daphne(env, log).start()
    try:
        yield Site(daphne, env, log, session, run_id)
    finally:
        daphne.stop()


LONG = "a" * 3000
REFUSED_PATHS = [  # (path, why)
    ("/ws/nope/", "unknown path"),
    ("/ws/", "unknown path"),
    ("/", "the root"),
    ("/api/runs/", "an HTTP path"),
    ("/ws/runs/a/b/", "an extra segment"),
    ("/ws/runs/abc", "no trailing slash"),
    ("/ws/runs/a%00b/", "a NUL in the run id"),
    (f"/ws/runs/{LONG}/", "a 3,000-character run id"),
    ("/ws/runs/" + "a" * 65 + "/", "one character over the run-id limit"),
    ("/ws/runs/a%20b/", "a space in the run id"),
    ("/ws/runs/%C3%A9t%C3%A9/", "non-ASCII run id"),
    ("/ws/ingest/a%00b/", "a NUL in an ingest run id"),
    (f"/ws/ingest/{LONG}/", "a 3,000-character ingest run id"),
]


@pytest.mark.parametrize(("path", "why"), REFUSED_PATHS, ids=[why for _, why in REFUSED_PATHS])
@pytest.mark.parametrize("with_session", [False, True], ids=["anonymous", "staff"])
def test_unknown_paths_and_malformed_run_ids_are_refused_at_the_handshake(
    site: Site, path: str, why: str, with_session: bool
):
    start = site.log.stat().st_size
    headers = {"Origin": site.daphne.url}
    if with_session:
        headers["Cookie"] = f"sessionid={site.session}"
    with pytest.raises(InvalidStatus) as refused:
        connect(site.daphne.ws_url + path, additional_headers=headers, open_timeout=10)
    assert refused.value.response.status_code == 403, why
    # a good path still works on the same server afterwards: the refusal hurt nothing
    ok = connect(
        f"{site.daphne.ws_url}/ws/runs/{site.run_id}/",
        additional_headers={"Origin": site.daphne.url, "Cookie": f"sessionid={site.session}"},
        open_timeout=10,
    )
    with ok:
        assert '"snapshot"' in ok.recv(timeout=10)
    logged = site.log.read_bytes()[start:].decode("utf-8", "replace")
    for bad in ("Traceback", "ERROR", "CRITICAL", "Group name must", " 500 "):
        assert bad not in logged, logged
