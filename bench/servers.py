"""Real servers for the live figures: a migrated SQLite file, Daphne processes, redis-server.

Uses devservers/processes.py (the same helpers the live tests use).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from devservers.migrated import database_migrate
from devservers.processes import Daphne, Redis, manage, server_env

SQLITE = "sqlite:///"
# prepare_site's set-up, in one Django process (each start costs ~1.3 s of imports): the
# commands, then the API tokens (``create_api_token``, as an operator makes them) and a staff
# session; its last line says the tokens and the session.
SETUP = """
import json; from io import StringIO
from django.contrib.auth import get_user_model; from django.core.management import call_command
from django.test import Client
for args in {commands!r}:
    call_command(*args, stdout=StringIO(), stderr=StringIO())
made = []
for name in {tokens!r}:
    out = StringIO(); call_command("create_api_token", name, stdout=out, stderr=StringIO())
    made.append(out.getvalue().strip().splitlines()[-1])
u = get_user_model().objects.create_user("bench-op", password="pw-12345678", is_staff=True)
c = Client(); c.force_login(u)
print(json.dumps({{"tokens": made, "session": c.cookies["sessionid"].value}}))
from django.db import connections; connections.close_all()  # SQLite: the WAL checkpointed
"""


@dataclass
class Site:
    """A prepared database: the Generator workflow, a runtime token, a staff session."""

    workdir: Path
    database_url: str
    secret_key: str
    token: str
    session: str
    tokens: tuple[str, ...] = ()  # prepare_site's ``tokens`` more API tokens

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


def prepare_site(
    workdir: Path,
    database_url: str | None = None,
    *,
    tokens: int = 0,
    commands: Sequence[Sequence[str]] = (),
) -> Site:
    """Migrate a fresh database (a SQLite file unless given) and create the workflow, a token
    and a staff session; ``tokens``: that many more API tokens (``Site.tokens``);
    ``commands``: more management commands run after ``demo_setup`` (e.g. ``import_context``),
    all in one Django process."""
    database_url = database_url or f"sqlite:///{workdir / 'live.sqlite3'}"
    secret_key = secrets.token_urlsafe(50)
    env = server_env(
        database_url, DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secret_key, DJANGO_LOG_LEVEL="WARNING"
    )
    first: list[tuple[str, ...]] = [("demo_setup",)]
    if database_url.startswith(SQLITE):
        database_migrate(env)  # a copy of the migrated template (devservers/migrated.py)
    else:
        first.insert(0, ("migrate", "--noinput"))  # in the set-up's process: one start fewer
    names = ["bench", *(f"bench-{index}" for index in range(tokens))]
    code = SETUP.format(commands=[*first, *(tuple(c) for c in commands)], tokens=names)
    done = manage(env, "shell", "--no-imports", "-c", code, check=False)
    if done.returncode:
        raise RuntimeError(f"prepare_site: the set-up failed:\n{done.stderr[-3000:]}")
    made = json.loads(done.stdout.splitlines()[-1])
    return Site(
        workdir,
        database_url,
        secret_key,
        made["tokens"][0],
        made["session"],
        tuple(made["tokens"][1:]),
    )


def site_copy(site: Site, database_url: str) -> Site:
    """``site`` on a database of its own: a copy of its prepared SQLite file (taken before
    anything ran on it), so another figure starts from the same fresh database without a
    Django process (the same workflows, tokens and staff session)."""
    if not (site.database_url.startswith(SQLITE) and database_url.startswith(SQLITE)):
        raise ValueError("site_copy: SQLite databases only")
    source, target = (Path(url.removeprefix(SQLITE)) for url in (site.database_url, database_url))
    with (
        contextlib.closing(sqlite3.connect(source)) as original,
        contextlib.closing(sqlite3.connect(target)) as copy,
    ):
        original.backup(copy)  # the WAL's pages included
    return dataclasses.replace(site, database_url=database_url)


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
