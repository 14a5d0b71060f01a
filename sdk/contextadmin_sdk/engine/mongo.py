"""The MongoDB source of database variables (seed 000 step 6), through pymongo.

One ``find_one`` per (database, collection, search_by) group, projecting top-level fields only
and drilling into dotted ``field`` paths in Python: some MongoDB-wire servers (nx-27017) return
flat ``"a.b"`` keys for nested projections. Failures become ``unresolved`` lookups with a reason;
nothing here raises into ``build_context``.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pymongo is the SDK's "mongo" extra: imported only where it is used
    from pymongo import MongoClient

from .format import JSON_MAX_DEPTH, DatabaseVariable, json_nesting_exceeds
from .log import logger
from .paths import drill, split_path

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "Lookup",
    "database_source",
    "fetch_database_variables",
    "json_safe",
    "mongo_client",
]

DEFAULT_TIMEOUT_MS = 2_000  # a lookup never blocks a run's start for longer than this
REASON_MAX_CHARS = 200  # pymongo's topology descriptions are long


@dataclass(frozen=True)
class Lookup:
    """The outcome of one database variable: a value, or the reason there is none."""

    status: str  # "resolved" | "unresolved"
    value: Any
    source: str  # db.<database>.<collection>.<field>
    reason: str | None = None


def mongo_client(
    uri: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS, **options: Any
) -> MongoClient[dict[str, Any]]:
    """Return a client whose server selection, connect and socket waits are all bounded."""
    from pymongo import MongoClient

    return MongoClient(
        uri,
        serverSelectionTimeoutMS=timeout_ms,
        connectTimeoutMS=timeout_ms,
        socketTimeoutMS=timeout_ms,
        **options,
    )


def database_source(
    variable: DatabaseVariable, *, default_database: str | None
) -> tuple[str, str, str, str]:
    """Return (database, collection, search_by, field); the variable's database wins."""
    source = variable.source
    database = source.database_name or default_database or ""
    return database, source.collection, source.search_by, source.field


def json_safe(value: Any) -> Any:
    """Convert BSON values (ObjectId, datetime, Decimal128, bytes...) to plain JSON data.

    Raises ``ValueError`` for a value nested deeper than ``JSON_MAX_DEPTH`` (checked first,
    without recursion), or holding a NUL character in a string or a key (BSON allows it;
    PostgreSQL, which may store the run, does not), which no run may hold.
    """
    if json_nesting_exceeds(value, JSON_MAX_DEPTH):
        raise ValueError(f"nested more than {JSON_MAX_DEPTH} levels")
    return _json_safe(value)


def _json_safe(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {_text(str(key)): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)  # ObjectId, Decimal128, Timestamp, Regex...


def _text(text: str) -> str:
    if "\x00" in text:
        raise ValueError("holds a NUL character, which a run's context cannot hold")
    return text


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= REASON_MAX_CHARS else text[:REASON_MAX_CHARS] + "…"


def fetch_database_variables(
    mongo: MongoClient[Any],
    variables: Iterable[DatabaseVariable],
    *,
    enterprise_id: str,
    default_database: str | None = None,
) -> dict[str, Lookup]:
    """Look every variable up for ``enterprise_id`` with one round trip per group."""
    from pymongo.errors import ConnectionFailure, PyMongoError  # a client was given: installed

    groups: dict[tuple[str, str, str], list[tuple[DatabaseVariable, str]]] = {}
    for variable in variables:
        database, collection, search_by, field = database_source(
            variable, default_database=default_database
        )
        groups.setdefault((database, collection, search_by), []).append((variable, field))

    lookups: dict[str, Lookup] = {}
    unreachable: str | None = None
    for (database, collection, search_by), members in groups.items():
        where = f"{database}.{collection}"

        def fail(
            reason: str, members: list[tuple[DatabaseVariable, str]] = members, where: str = where
        ) -> None:
            for variable, field in members:
                lookups[variable.name] = Lookup("unresolved", None, f"db.{where}.{field}", reason)

        if unreachable is not None:  # one timeout is enough: don't wait again per group
            fail(unreachable)
            continue
        tops = sorted({split_path(field)[0] for _, field in members})
        projection: dict[str, int] = dict.fromkeys(tops, 1)
        if "_id" not in projection:
            projection["_id"] = 0
        try:
            document = mongo[database][collection].find_one(
                {search_by: enterprise_id}, projection, sort=[("_id", 1)]
            )
        except ConnectionFailure as exc:
            unreachable = f"MongoDB unreachable: {_short(exc)}"
            logger.warning("database variables: %s", unreachable)
            fail(unreachable)
            continue
        except PyMongoError as exc:
            reason = f"MongoDB error on {where}: {_short(exc)}"
            logger.warning("database variables: %s", reason)
            fail(reason)
            continue
        if document is None:
            fail(f"no document in {where} with {search_by}={enterprise_id!r}")
            continue
        for variable, field in members:
            source = f"db.{where}.{field}"
            found, value = drill(document, split_path(field))
            if found and json_nesting_exceeds(value, JSON_MAX_DEPTH):
                reason = f"the value of {field} is nested more than {JSON_MAX_DEPTH} levels"
                lookups[variable.name] = Lookup("unresolved", None, source, reason)
            elif found:
                try:
                    lookups[variable.name] = Lookup("resolved", json_safe(value), source)
                except ValueError as exc:  # a NUL: no run's context may hold it
                    reason = f"the value of {field} {exc}"
                    lookups[variable.name] = Lookup("unresolved", None, source, reason)
            else:
                reason = (
                    f"no field {field} in the {where} document with {search_by}={enterprise_id!r}"
                )
                lookups[variable.name] = Lookup("unresolved", None, source, reason)
    return lookups
