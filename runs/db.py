"""Database plumbing the ORM does not give: what the hot paths of ingest need to be fast.

- ``sqlite_wal_hold``: keep each SQLite file's WAL open for the process's life
  (connected to ``connection_created`` in ``RunsConfig.ready``);
- ``run_events_insert``: a batch of events in one prepared INSERT on SQLite;
- ``run_locked_get``, ``run_fields_save``, ``api_tokens_with_prefix``: the other queries of
  every ingest as plain SQL (the ORM's query compilation cost 0.4-0.5 ms per query here);
- ``kept_connection_sync_to_async``: run ORM code from async code in the thread pool, keeping
  each pool thread's connection between calls.

Each is measured in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from typing import Any, TypeVar

import orjson
from asgiref.sync import SyncToAsync
from django.db import connections, router
from django.db.models import Model
from django.utils import timezone

from runs.models import ApiToken, Run, RunEvent

logger = logging.getLogger(__name__)

# -- SQLite: keep each database's WAL open for the process's life ----------------------------
_wal_holders: dict[str, sqlite3.Connection] = {}
_wal_holders_lock = threading.Lock()


def sqlite_wal_hold(sender: Any, connection: Any, **kwargs: Any) -> None:
    """On a process's first connection to a SQLite file, open one idle connection and keep it.

    Under ASGI every HTTP request runs in a new thread with a new connection. When the *last*
    connection to a WAL database closes, SQLite checkpoints the whole WAL into the database,
    fsyncs and deletes it, and the next request waits on that lock (docs/benchmarks.md: 5-10 ms
    per request). An idle connection that holds no transaction keeps the WAL in place;
    checkpoints still run as usual (every 1,000 pages, on commit).
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


def sqlite_wal_release() -> None:
    """Close the held connections (``sqlite_wal_hold``): before a database file is deleted,
    as the test database is at the end of a test run, or its ``-wal``/``-shm`` stay behind."""
    with _wal_holders_lock:
        for holder in _wal_holders.values():
            holder.close()
        _wal_holders.clear()


_RUN_EVENT_FIELDS = ("run", "seq", "type", "agent", "payload", "result", "received_at")


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):  # e.g. an integer beyond 64 bits
        return json.dumps(value)


def run_events_insert(stored: list[RunEvent]) -> None:
    """``RunEvent.objects.bulk_create(stored)``; on SQLite one prepared INSERT run per row.

    Django's per-row, per-field preparation (datetime adaptation, stdlib JSON) was half the
    cost of a 100-event batch; the rows are the same: JSON text, one received_at per batch.
    """
    connection = connections[router.db_for_write(RunEvent)]
    if connection.vendor != "sqlite" or not stored:
        RunEvent.objects.bulk_create(stored)
        return
    now = timezone.now()
    received_at = connection.ops.adapt_datetimefield_value(now)
    meta = RunEvent._meta
    quote = connection.ops.quote_name
    columns = ", ".join(quote(meta.get_field(name).column) for name in _RUN_EVENT_FIELDS)
    placeholders = ", ".join(["%s"] * len(_RUN_EVENT_FIELDS))
    rows = []
    for event in stored:
        event.received_at = now
        payload, result = _json_text(event.payload), _json_text(event.result)
        rows.append(
            (event.run_id, event.seq, event.type, event.agent, payload, result, received_at)
        )
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({placeholders})",  # noqa: S608
            rows,
        )


# -- the other queries of every ingest, without the ORM's per-query compilation ---------------
# Each is the ORM call in its docstring, on any database; the models' fields adapt the values.
def run_locked_get(*, run_id: str, deferred: tuple[str, ...]) -> Run | None:
    """``Run.objects.select_for_update().defer(*deferred).filter(pk=run_id).first()``: the
    run's row, locked until the transaction ends (SQLite: the IMMEDIATE transaction's lock)."""
    connection = connections[router.db_for_write(Run)]
    meta = Run._meta
    quote = connection.ops.quote_name
    fields = tuple(f for f in meta.concrete_fields if f.name not in deferred)
    columns = ", ".join(quote(f.column) for f in fields)
    sql = f"SELECT {columns} FROM {quote(meta.db_table)} WHERE {quote(meta.pk.column)} = %s"  # noqa: S608
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    found = _models_from_rows(Run, connection=connection, fields=fields, sql=sql, params=[run_id])
    return found[0] if found else None


def run_fields_save(run: Run, *, fields: tuple[str, ...]) -> None:
    """``run.save(update_fields=fields)`` (Run has no save signals or overrides)."""
    connection = connections[router.db_for_write(Run)]
    meta = Run._meta
    quote = connection.ops.quote_name
    model_fields = [meta.get_field(name) for name in fields]
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in model_fields)  # type: ignore[union-attr]
    values = [
        f.get_db_prep_save(getattr(run, f.attname), connection)  # type: ignore[union-attr]
        for f in model_fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(meta.db_table)} SET {assignments} "  # noqa: S608
            f"WHERE {quote(meta.pk.column)} = %s",
            [*values, run.pk],
        )


def api_tokens_with_prefix(prefix: str) -> list[ApiToken]:
    """``list(ApiToken.objects.filter(prefix=prefix))`` (the workflow loads when used)."""
    connection = connections[router.db_for_read(ApiToken)]
    meta = ApiToken._meta
    quote = connection.ops.quote_name
    fields = tuple(meta.concrete_fields)
    columns = ", ".join(quote(f.column) for f in fields)
    prefix_column = quote(meta.get_field("prefix").column)
    sql = f"SELECT {columns} FROM {quote(meta.db_table)} WHERE {prefix_column} = %s"  # noqa: S608
    return _models_from_rows(
        ApiToken, connection=connection, fields=fields, sql=sql, params=[prefix]
    )


_Model = TypeVar("_Model", bound=Model)


def _models_from_rows(
    model: type[_Model], *, connection: Any, fields: tuple[Any, ...], sql: str, params: list[Any]
) -> list[_Model]:
    """``model.objects.raw(sql, params)`` for a query that selects ``fields``' columns in order:
    the rows go through each field's database converters into ``model.from_db``, as the ORM
    does, without ``RawQuerySet``'s per-query column mapping (0.1 ms a query here)."""
    converters = []  # as SQLCompiler.get_converters: the backend's, then the field's own
    for index, field in enumerate(fields):
        column = field.get_col(model._meta.db_table)
        found = [*connection.ops.get_db_converters(column), *column.get_db_converters(connection)]
        if found:
            converters.append((index, column, found))
    attnames = [field.attname for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    instances = []
    for row in rows:
        values = list(row)
        for index, column, field_converters in converters:
            for converter in field_converters:
                values[index] = converter(values[index], column, connection)
        instances.append(model.from_db(connection.alias, attnames, values))
    return instances


# -- kept connections for the hot paths -----------------------------------------------------
class KeptConnectionSyncToAsync(SyncToAsync):
    """``database_sync_to_async`` for the ingest paths: runs in the thread pool (not the one
    thread-sensitive thread) and keeps each pool thread's database connections between calls.

    channels' version applies Django's request-end rules before and after every call; with
    ``CONN_MAX_AGE = 0`` (the SQLite default here) that closes the connection every time, and
    a new SQLite connection costs 0.6 ms. Here a connection with ``CONN_MAX_AGE = 0`` is kept
    for the thread's life unless it is left in a transaction or broken; with any other
    ``CONN_MAX_AGE`` (PostgreSQL: 60 s with health checks) Django's own rules apply. The pool
    has a few threads, so at most that many connections are kept.
    """

    def __init__(self, func: Any) -> None:
        super().__init__(func, thread_sensitive=False)

    def thread_handler(self, loop: Any, *args: Any, **kwargs: Any) -> Any:
        _kept_connections_check()
        try:
            return super().thread_handler(loop, *args, **kwargs)
        finally:
            _kept_connections_check()


kept_connection_sync_to_async = KeptConnectionSyncToAsync


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
        elif connection.errors_occurred:
            if connection.is_usable():
                connection.errors_occurred = False
            else:
                connection.close()
