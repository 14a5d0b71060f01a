"""PostgreSQL connections come from Django's connection pool (contextadmin/settings.py,
docs/deploy.md): a Daphne answering 120 API requests and an ingest socket's 60 messages opens
at most DATABASE_POOL_MAX_SIZE sessions, not one per request, and every answer is right (the
ingest socket's thread keeps a pooled connection: runs.db.pool_sync_to_async)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from typing import Any

import psycopg
import pytest
from websockets.sync.client import connect

from devservers import postgres
from devservers.processes import PROJECT, Daphne, manage, server_env
from tests.runs.conftest import demo_config

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not postgres.available(), reason="no PostgreSQL binaries"),
]

POOL_MAX = 4


def _settings(env: dict[str, str]) -> dict[str, Any]:
    script = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "d=s.DATABASES['default']; pool=d.get('OPTIONS', {}).get('pool'); "
        "print(json.dumps({'age': d['CONN_MAX_AGE'], 'pool': pool and "
        "{k: v for k, v in pool.items() if k != 'check'}}))"
    )
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=PROJECT,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_postgres_settings_use_the_pool_with_documented_defaults(tmp_path):
    url = "postgres://u:p@127.0.0.1:5432/db"
    assert _settings(server_env(url)) == {"age": 0, "pool": {
        "min_size": 2, "max_size": 20, "timeout": 10.0, "max_idle": 600.0,
        "max_lifetime": 3600.0}}
    assert _settings(server_env(url, DATABASE_POOL="0"))["pool"] is None
    assert _settings(server_env(url, DATABASE_POOL="0"))["age"] == 60
    sqlite = _settings(server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    assert sqlite["pool"] is None


def _sessions(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_daphne_on_postgres_opens_at_most_the_pool_s_connections(tmp_path):
    pg = postgres.Postgres().start()
    daphne = None
    try:
        url = pg.create_database("pool")
        env = server_env(url, MONGODB_URI="", DATABASE_POOL_MAX_SIZE=str(POOL_MAX),
                         DATABASE_POOL_MIN_SIZE="1")
        manage(env, "migrate", "--noinput")
        config = tmp_path / "context_variables.json"
        config.write_text(json.dumps(demo_config()))
        manage(env, "import_context", str(config), "--workflow", "Generator")
        token = manage(env, "create_api_token", "rt").stdout.strip().splitlines()[-1]
        daphne = Daphne(env, tmp_path / "daphne.log").start()

        def call(method: str, path: str, body: Any = None) -> Any:
            request = urllib.request.Request(  # noqa: S310  (loopback test server)
                daphne.url + path, method=method,
                data=None if body is None else json.dumps(body).encode(),
                headers={"Authorization": f"Bearer {token}",
                         "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                return json.loads(response.read())

        run_id = call("POST", "/api/runs/", {"workflow": "Generator", "enterprise_id": "a"})[
            "run_id"]
        before = _sessions(url)
        for n in range(60):
            answer = call("POST", f"/api/runs/{run_id}/events/",
                          {"events": [{"type": "agent_text", "agent": "a", "text": str(n)}]})
            assert answer["last_seq"] == n + 1
            assert call("GET", f"/api/runs/{run_id}/state/")["seq"] == n + 1
        with connect(f"{daphne.ws_url}/ws/ingest/{run_id}/",
                     additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            for n in range(60):
                ws.send(json.dumps({"type": "agent_text", "agent": "b", "text": str(n)}))
                assert json.loads(ws.recv(timeout=10))["seq"] == 61 + n
        opened = _sessions(url) - before
        assert opened <= POOL_MAX, f"{opened} connections for 180 requests and messages"
        assert call("GET", f"/api/runs/{run_id}/state/")["seq"] == 120
    finally:
        if daphne is not None:
            daphne.stop()
        pg.stop()
