"""An open inspector socket lives only as long as its staff session: on a real Daphne, logging
out, deleting the session, deactivating the user, taking staff away or changing the password
closes ``/ws/runs/<id>/`` and ``/ws/runs/`` (4401, or 4403 for no longer staff) within about a
second, and no event reaches them after that."""

from __future__ import annotations

import json
import secrets
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from devservers.migrated import database_migrate
from devservers.processes import Daphne, manage, server_env
from tests.runs.conftest import demo_config

pytestmark = pytest.mark.slow

CASES = {  # name -> (what changes, in the server's database; the close code)
    "logout": ("c=Client(HTTP_HOST='localhost'); c.cookies['sessionid']=key\n"
               "assert c.post('/admin/logout/').status_code == 200", 4401),
    "session-deleted": ("Session.objects.filter(session_key=key).delete()", 4401),
    "user-inactive": ("user.is_active=False; user.save()", 4401),
    "no-longer-staff": ("user.is_staff=False; user.save()", 4403),
    "password-changed": ("user.set_password('another-pw-987'); user.save()", 4401),
}


@dataclass
class Site:
    daphne: Daphne
    env: dict[str, str]
    token: str
    run_id: str
    sessions: dict[str, str]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("inspector-sessions")
    env = server_env(f"sqlite:///{workdir / 'db.sqlite3'}", DJANGO_DEBUG="0",
                     DJANGO_SECRET_KEY=secrets.token_urlsafe(50), MONGODB_URI="")
    database_migrate(env)
    config = workdir / "context_variables.json"
    config.write_text(json.dumps(demo_config()))
    manage(env, "import_context", str(config), "--workflow", "Generator")
    names = ["control", *CASES]
    script = (
        "from django.contrib.auth import get_user_model; from django.test import Client\n"
        "from runs.services.lifecycle import run_start; from runs.tokens import "
        "api_token_create\n"
        f"for name in {names!r}:\n"
        "    u=get_user_model().objects.create_user(name, password='pw-12345678', is_staff=True)\n"
        "    c=Client(); c.force_login(u); print(name, c.cookies['sessionid'].value)\n"
        "print('token', api_token_create(name='rt')[1])\n"
        "print('run', run_start(workflow_name='Generator', enterprise_id='acme').run.pk)\n"
    )
    lines = manage(env, "shell", "-c", script).stdout.strip().splitlines()
    found = dict(line.split(" ", 1) for line in lines if " " in line)
    daphne = Daphne(env, workdir / "daphne.log").start()
    try:
        yield Site(daphne, env, found["token"], found["run"], {n: found[n] for n in names})
    finally:
        daphne.stop()


def _post(site: Site, path: str, body: Any) -> Any:
    request = urllib.request.Request(  # noqa: S310  (loopback test server)
        site.daphne.url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {site.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return json.loads(response.read())


def _activity(site: Site, n: int) -> None:
    """One event on the watched run and one new run (a message for /ws/runs/)."""
    _post(site, f"/api/runs/{site.run_id}/events/",
          {"events": [{"type": "agent_text", "agent": "interviewer", "text": f"turn {n}"}]})
    _post(site, "/api/runs/", {"workflow": "Generator", "enterprise_id": f"e{n}"})


def _open(site: Site, path: str, session: str) -> ClientConnection:
    headers = {"Origin": site.daphne.url, "Cookie": f"sessionid={session}"}
    return connect(
        site.daphne.ws_url + path, open_timeout=10, additional_headers=headers)


def _next(ws: ClientConnection, kind: str, n: int) -> dict[str, Any]:
    """The message of round ``n``: the event "turn n", or the start of run e<n> (the list also
    announces the watched run's changes)."""
    while True:
        message = json.loads(ws.recv(timeout=10))
        wanted = (
            ("event", "text", message.get("event", {}).get("text"), f"turn {n}")
            if kind == "run"
            else ("run", "run", message.get("run", {}).get("enterprise_id"), f"e{n}")
        )
        if message["type"] == wanted[0] and wanted[2] == wanted[3]:
            return message


def test_an_inspector_socket_closes_when_its_session_or_user_stops_being_staff(site: Site):
    with ExitStack() as stack:
        sockets = {
            (name, kind): stack.enter_context(_open(site, path, session))
            for name, session in site.sessions.items()
            for kind, path in (("run", f"/ws/runs/{site.run_id}/"), ("list", "/ws/runs/"))
        }
        _watch(site, sockets)


def _watch(site: Site, sockets: dict[tuple[str, str], ClientConnection]) -> None:
    """Each socket gets round 1; after the changes, only the control sockets get round 2."""
    for (_, kind), ws in sockets.items():
        if kind == "run":
            assert json.loads(ws.recv(timeout=10))["type"] == "snapshot"
    _activity(site, 1)  # every socket is live before the change
    for (_, kind), ws in sockets.items():
        assert _next(ws, kind, 1)
    changes = "\n".join(
        f"key={site.sessions[name]!r}; user=get_user_model().objects.get(username={name!r})\n"
        f"{change}"
        for name, (change, _) in CASES.items()
    )
    manage(site.env, "shell", "-c",
           "from django.contrib.auth import get_user_model; from django.test import Client\n"
           "from django.contrib.sessions.models import Session\n" + changes)
    time.sleep(1.3)  # SESSION_RECHECK_S, and a margin
    _activity(site, 2)
    for (name, kind), ws in sockets.items():
        if name == "control":  # the live staff session still gets everything
            assert _next(ws, kind, 2)
            continue
        received = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                received.append(json.loads(ws.recv(timeout=10)))
        assert closed.value.rcvd is not None and closed.value.rcvd.code == CASES[name][1], (
            name, kind, closed.value)
        assert received == [], (name, kind, received)
