"""Limits on real servers: Daphne's websocket message cap, a rate limit shared by two Daphne
processes through Redis, NUL characters refused before PostgreSQL sees them, and server logs
free of secrets (DEBUG logging on, a token in the query string, secrets in the environment).
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from devservers import postgres
from devservers.migrated import database_migrate
from devservers.processes import Daphne, Redis, manage, server_env
from tests.runs.conftest import demo_config

pytestmark = [pytest.mark.slow, pytest.mark.redis]

MAX_MESSAGE = 1_048_576  # --websocket-max-message-size in scripts/run and tests/support
RATE = 10  # API_RATE_LIMIT_PER_MINUTE of these servers
ENV_SECRET = "sk-secret-daphne-zq93"


@dataclass
class Site:
    a: Daphne
    b: Daphne
    tokens: dict[str, str]
    database: str
    logs: list[Path]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("daphne-limits")
    redis = Redis(workdir).start()
    pg = postgres.Postgres().start() if postgres.available() else None
    servers: list[Daphne] = []
    try:
        database_url = (
            pg.create_database("limits") if pg else f"sqlite:///{workdir / 'db.sqlite3'}"
        )
        env = server_env(
            database_url,
            DJANGO_DEBUG="0",
            DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
            DJANGO_LOG_LEVEL="DEBUG",
            REDIS_URL=redis.url,
            API_RATE_LIMIT_PER_MINUTE=str(RATE),
            MONGODB_URI="",
            OPENAI_API_KEY=ENV_SECRET,
        )
        config = workdir / "context_variables.json"
        config.write_text(json.dumps(demo_config()))
        database_migrate(env)
        manage(env, "import_context", str(config), "--workflow", "Generator")
        tokens = {
            name: manage(env, "create_api_token", name).stdout.strip().splitlines()[-1]
            for name in ("socket", "shared", "nul")
        }
        logs = [workdir / "a.log", workdir / "b.log"]
        servers = [Daphne(env, log).start() for log in logs]
        yield Site(servers[0], servers[1], tokens, "postgresql" if pg else "sqlite", logs)
    finally:
        for server in servers:
            server.stop()
        redis.stop()
        if pg:
            pg.stop()


def http(method: str, url: str, token: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310  (loopback test server)
        url, data=data, method=method,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",  # a page refuses a NUL as HTML to a browser
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


def start_run(server: Daphne, token: str) -> str:
    status, _, body = http("POST", f"{server.url}/api/runs/", token,
                           {"workflow": "Generator", "enterprise_id": "acme"})
    assert status == 201, body
    return body["run_id"]


def test_websocket_messages_over_the_cap_close_the_socket(site: Site):
    token = site.tokens["socket"]
    run_id = start_run(site.a, token)
    url = f"{site.a.ws_url}/ws/ingest/{run_id}/?token={token}"
    prefix = '{"type": "agent_text", "agent": "a", "text": "'
    just_under = prefix + "x" * (MAX_MESSAGE - len(prefix) - 2) + '"}'
    assert len(just_under.encode()) == MAX_MESSAGE
    with connect(url, max_size=None, open_timeout=10) as ws:
        ws.send(just_under)  # reaches the app, which refuses the over-long text by name
        reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "error" and reply["error"].startswith("events[0].text: at most")
        ws.send('{"type": "agent_text", "agent": "a", "text": "ok"}')
        assert json.loads(ws.recv(timeout=10))["type"] == "ack"
        ws.send(just_under[:-2] + 'x"}')  # one byte over
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    # autobahn fails the connection (1009, "message too big") and drops it: never the app's
    if closed.value.rcvd is not None:
        assert closed.value.rcvd.code == 1009
    status, _, state = http("GET", f"{site.a.url}/api/runs/{run_id}/state/", token)
    assert (status, state["seq"]) == (200, 1), "only the small event was stored"


def test_two_processes_share_the_rate_limit_through_redis(site: Site):
    token = site.tokens["shared"]
    run_id = start_run(site.a, token)  # 1 of RATE
    statuses = []
    for index in range(RATE - 1):
        server = site.a if index % 2 else site.b
        statuses.append(http("GET", f"{server.url}/api/runs/{run_id}/state/", token)[0])
    assert statuses == [200] * (RATE - 1)
    for server in (site.a, site.b):
        status, headers, body = http("GET", f"{server.url}/api/runs/{run_id}/state/", token)
        assert status == 429
        assert int(headers["Retry-After"]) == 60 // RATE
        assert "API_RATE_LIMIT_PER_MINUTE" in body["error"]


def test_nul_characters_are_refused_before_the_database(site: Site):
    token = site.tokens["nul"]
    run_id = start_run(site.b, token)
    for path, body in (
        (f"/api/runs/{run_id}/events/",
         b'{"events": [{"type": "agent_text", "agent": "a", "text": "x\\u0000y"}]}'),
        ("/api/runs/", b'{"workflow": "Generator", "enterprise_id": "acme", '
                       b'"context": {"k\\u0000": 1}}'),
    ):
        status, _, answer = http("POST", f"{site.b.url}{path}", token, body)
        assert status == 400, (site.database, answer)
        assert "NUL" in answer["error"]
    for path in (
        "/api/runs/a%00b/state/",
        "/api/workflows/a%00b/context_variables.json",
        f"/api/runs/{run_id}/resolve/?template=%00",
        "/runs/?workflow=%00",
    ):
        status, _, answer = http("GET", f"{site.b.url}{path}", token)
        assert status == 400 and "NUL" in answer["error"], (path, site.database, answer)
    status, _, answer = http("GET", f"{site.b.url}/api/runs/{run_id}/state/", token)
    assert status == 200 and answer["seq"] == 0
    # a run id that breaks the run-id rule has no route: refused at the handshake
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{site.b.ws_url}/ws/ingest/a%00b/?token={token}", open_timeout=10)
    assert refused.value.response.status_code == 403


def test_server_logs_hold_no_secret(site: Site):
    text = "".join(log.read_text(errors="replace") for log in site.logs)
    assert "runs.services" in text or "run " in text, "the servers logged at DEBUG"
    for secret in (*site.tokens.values(), ENV_SECRET):
        assert secret not in text
        assert secret.split("_", 2)[-1] not in text  # a token's random part
    assert "Traceback" not in text

