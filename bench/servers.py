"""Real servers for the live figures: a migrated SQLite file, Daphne processes, redis-server.

Uses devservers/processes.py (the same helpers the live tests use).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from devservers.migrated import database_migrate
from devservers.processes import Daphne, Redis, manage, server_env

STAFF_SESSION = (
    "from django.contrib.auth import get_user_model; from django.test import Client; "
    "u=get_user_model().objects.create_user('bench-op', password='pw-12345678', is_staff=True); "
    "c=Client(); c.force_login(u); print(c.cookies['sessionid'].value)"
)


@dataclass
class Site:
    """A prepared database: the Generator workflow, a runtime token, a staff session."""

    workdir: Path
    database_url: str
    secret_key: str
    token: str
    session: str

    def env(self, *, redis_url: str | None = None, redis_layer: str = "pubsub") -> dict[str, str]:
        extra = {
            "DJANGO_DEBUG": "0",  # as in production: no query log, no debug pages
            "DJANGO_SECRET_KEY": self.secret_key,
            "DJANGO_LOG_LEVEL": "WARNING",
        }
        if redis_url:
            extra["REDIS_URL"] = redis_url
            extra["REDIS_CHANNEL_LAYER"] = redis_layer
        return server_env(self.database_url, **extra)


def prepare_site(workdir: Path, database_url: str | None = None) -> Site:
    """Migrate a fresh database (a SQLite file unless given) and create the workflow, a token
    and a staff session."""
    database_url = database_url or f"sqlite:///{workdir / 'live.sqlite3'}"
    secret_key = secrets.token_urlsafe(50)
    env = server_env(
        database_url, DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secret_key, DJANGO_LOG_LEVEL="WARNING"
    )
    database_migrate(env)
    # Independent of each other: run them side by side (each is mostly Django start-up).
    with ThreadPoolExecutor(max_workers=3) as pool:
        setup = pool.submit(manage, env, "demo_setup")
        token = pool.submit(manage, env, "create_api_token", "bench")
        session = pool.submit(manage, env, "shell", "-c", STAFF_SESSION)
        setup.result()
        return Site(
            workdir,
            database_url,
            secret_key,
            token.result().stdout.strip().splitlines()[-1],
            session.result().stdout.strip().splitlines()[-1],
        )


@contextlib.contextmanager
def daphnes(
    site: Site,
    count: int,
    *,
    redis_url: str | None = None,
    redis_layer: str = "pubsub",
    application: str = "contextadmin.asgi:application",
    settings: dict[str, str] | None = None,
) -> Iterator[list[Daphne]]:
    """Start ``count`` Daphne processes on the site's database (and Redis layer, if given:
    ``redis_layer`` is settings.REDIS_CHANNEL_LAYER, "pubsub" or "lists"; ``application``:
    another ASGI application, e.g. bench/ungrouped_asgi.py; ``settings``: more environment)."""
    servers: list[Daphne] = []
    try:
        for index in range(count):
            log = site.workdir / f"daphne-{'redis' if redis_url else 'memory'}-{index}.log"
            env = {**site.env(redis_url=redis_url, redis_layer=redis_layer), **(settings or {})}
            daphne = Daphne(env=env, log_path=log, application=application)
            servers.append(daphne.start())
        yield servers
    finally:
        for server in servers:
            server.stop()


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[Redis]:
    redis = Redis(workdir=workdir).start()
    try:
        yield redis
    finally:
        redis.stop()
