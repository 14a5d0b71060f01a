"""A day of operations on the production shape of docs/deploy.md: what an operator meets when a
setting is wrong at start, and the health check an orchestrator polls (real Daphne, nginx with
the documented config, PostgreSQL and Redis, stopped under it)."""

from __future__ import annotations

import subprocess

import pytest

from devservers.migrated import database_migrate
from devservers.nginx import Nginx
from devservers.postgres import Postgres
from devservers.processes import BIN, PROJECT, Daphne, Redis, free_port, manage, server_env
from tests.reliability.helpers import http_json, wait_http

SECRET = "ops-day-test-" + "k" * 40

# A setting an operator gets wrong, and what the one line on stderr must say about it.
MISTAKES = [
    ({"DJANGO_DEBUG": "0"}, "DJANGO_SECRET_KEY: required, not set"),
    ({"DJANGO_DEBUG": "yes-please"}, "DJANGO_DEBUG: 'yes-please' is not on/off"),
    ({"DATABASE_URL": "postgres//contextadmin:hunter2@db/x"}, "DATABASE_URL: not a database URL"),
    ({"DATABASE_URL": "mssql://contextadmin:hunter2@db/x"}, "DATABASE_URL: not a database URL"),
    ({"REDIS_URL": "redis.internal:6379"}, "REDIS_URL: not a URL of redis://"),
    ({"MONGODB_URI": "reader:hunter2@mongo1"}, "MONGODB_URI: not a URL of mongodb://"),
    ({"API_MAX_BODY_BYTES": "1MB"}, "API_MAX_BODY_BYTES: '1MB' is not a whole number"),
    (  # django-environ would read "10ms" as 10.0 seconds
        {"DATABASE_URL": "postgres://u@127.0.0.1:1/x", "DATABASE_POOL_TIMEOUT_S": "10ms"},
        "DATABASE_POOL_TIMEOUT_S: '10ms' is not a number",
    ),
    ({"REDIS_CHANNEL_LAYER": "kafka"}, "REDIS_CHANNEL_LAYER: 'kafka', expected"),
]


def one_line_refusal(stderr: str) -> str:
    """The refusal an operator reads: exactly one line, no traceback, no password."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "hunter2" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize(("setting", "said"), MISTAKES, ids=[next(iter(m[0])) for m in MISTAKES])
def test_a_wrong_setting_stops_manage_py_with_one_line_naming_it(tmp_path, setting, said):
    env = server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", **{"MONGODB_URI": "", **setting})
    result = manage(env, "check", check=False)
    assert result.returncode == 1, result
    assert said in one_line_refusal(result.stderr)


def test_a_wrong_setting_stops_daphne_at_start_with_one_line(tmp_path):
    env = server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", API_MAX_BODY_BYTES="1MB")
    result = subprocess.run(
        [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(free_port()),
         "contextadmin.asgi:application"],
        env=env, cwd=PROJECT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    assert one_line_refusal(result.stderr) == (
        "contextadmin: API_MAX_BODY_BYTES: '1MB' is not a whole number "
        "(docs/deploy.md, Settings)"
    )


def test_the_documented_production_settings_pass_check_deploy(tmp_path):
    env = server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", MONGODB_URI="", DJANGO_DEBUG="0",
                     DJANGO_SECRET_KEY=SECRET, DJANGO_SECURE_SSL="1",
                     DJANGO_ALLOWED_HOSTS="contextadmin.example.com",
                     DJANGO_CSRF_TRUSTED_ORIGINS="https://contextadmin.example.com")
    result = manage(env, "check", "--deploy", check=False)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


@pytest.mark.slow
@pytest.mark.redis
def test_healthz_through_nginx_says_ok_degraded_then_down(tmp_path):
    """An orchestrator polls /healthz through the documented nginx: 200 ok; Redis stopped:
    200 degraded (ingest still works); PostgreSQL stopped: 503 down, within the pool timeout."""
    postgres = Postgres().start()
    redis = Redis(workdir=tmp_path).start()
    daphne = proxy = None
    try:
        env = server_env(postgres.create_database("ops_day"), MONGODB_URI="", REDIS_URL=redis.url,
                         DJANGO_DEBUG="0", DJANGO_SECRET_KEY=SECRET, DATABASE_POOL_TIMEOUT_S="1")
        database_migrate(env)
        daphne = Daphne(env=env, log_path=tmp_path / "daphne.log", args=("--proxy-headers",))
        daphne.start()
        wait_http(f"{daphne.url}/admin/login/", process=daphne)
        proxy = Nginx(workdir=tmp_path / "nginx", upstreams=[daphne.port]).start()
        health = f"{proxy.url}/healthz"

        assert http_json("GET", health) == (
            200, {"status": "ok", "database": "ok", "redis": "ok"})
        redis.stop()
        assert http_json("GET", health) == (
            200, {"status": "degraded", "database": "ok", "redis": "unreachable"})
        postgres.stop()
        assert http_json("GET", health) == (
            503, {"status": "down", "database": "unreachable", "redis": "unreachable"})
        log = (tmp_path / "daphne.log").read_text()
        assert "health check: redis unreachable" in log
        assert "health check: database unreachable" in log
    finally:
        for server in (proxy, daphne, redis, postgres):
            if server is not None:
                server.stop()
