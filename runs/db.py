"""Database connections for ASGI, through public APIs only.

- ``sqlite_wal_hold``: keep each SQLite file's WAL open for the process's life
  (connected to ``connection_created`` in ``RunsConfig.ready``);
- ``pool_sync_to_async``: run ORM code from async code in the thread pool, keeping each pool
  thread's database connection between calls.

Why each pays is in docs/benchmarks.md.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import DatabaseError, DataError, IntegrityError, connections, reset_queries

logger = logging.getLogger(__name__)

# -- SQLite: keep each database's WAL open for the process's life ----------------------------
_wal_holders: dict[str, sqlite3.Connection] = {}
_wal_holders_lock = threading.Lock()


def sqlite_wal_hold(sender: Any, connection: Any, **kwargs: Any) -> None:
    """On a process's first connection to a SQLite file, open one idle connection and keep it.

    Under ASGI every HTTP request runs in a new thread with a new connection. When the *last*
    connection to a WAL database closes, SQLite checkpoints the whole WAL into the database,
    fsyncs and deletes it, and the next request waits on that lock (docs/benchmarks.md). An
    idle connection that holds no transaction keeps the WAL in place; checkpoints still run as
    usual (every 1,000 pages, on commit).
    """
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        return
    name = str(connection.settings_dict["NAME"])
    if name in _wal_holders:
        return
    with _wal_holders_lock:
        if name in _wal_holders:
            return
        try:
            holder = sqlite3.connect(name, isolation_level=None, check_same_thread=False)
            holder.execute("PRAGMA schema_version").fetchall()  # opens the WAL; no lock kept
        except sqlite3.Error:  # an optimisation only: never fail a request for it
            logger.warning("could not hold %s open; WAL checkpoints on close", name)
            return
        _wal_holders[name] = holder


# -- kept connections for the hot paths -----------------------------------------------------
_P = ParamSpec("_P")
_R = TypeVar("_R")


def pool_sync_to_async(func: Callable[_P, _R]) -> Callable[_P, Awaitable[_R]]:
    """``sync_to_async(func, thread_sensitive=False)`` that keeps each pool thread's database
    connections between calls.

    For the ingest paths: in the thread pool, not the one thread-sensitive thread (channels
    dispatches every frame through it), and without channels' ``database_sync_to_async`` rule
    of applying the request-end checks around every call: with ``CONN_MAX_AGE = 0`` (SQLite,
    and PostgreSQL through Django's pool, the default) that closes the connection each time,
    and opening one (or taking it from the pool) is not free (docs/benchmarks.md). Here such a
    connection is kept for the thread's life unless it is left in a transaction or a database
    error other than a data or integrity error came out of the call (Django's own test for a
    connection that may be broken). With persistent connections (``DATABASE_POOL=0``:
    ``CONN_MAX_AGE=60``, health checks) Django's own rules apply. The pool has a few threads,
    so at most that many connections are kept.
    """

    @functools.wraps(func)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        # Each call is a request's worth of work: with DEBUG on, Django logs every query of a
        # connection until the next request starts, which a kept connection never sees.
        reset_queries()
        _kept_connections_check()
        try:
            return func(*args, **kwargs)
        except DatabaseError as exc:
            if not isinstance(exc, DataError | IntegrityError):
                _kept_connections_close()  # may be broken: the next call opens a fresh one
            raise
        finally:
            _kept_connections_check()

    return sync_to_async(call, thread_sensitive=False)


def _kept_connections_check() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.connection is None:
            continue
        if connection.settings_dict["CONN_MAX_AGE"] != 0:
            connection.close_if_unusable_or_obsolete()
        elif connection.in_atomic_block or (
            connection.get_autocommit() != connection.settings_dict["AUTOCOMMIT"]
        ):
            connection.close()  # never carry a transaction into the next call


def _kept_connections_close() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.settings_dict["CONN_MAX_AGE"] == 0:
            connection.close()
