"""HTTP: the format's JSON Schema, and the health check an orchestrator polls. (The workflow
export, with its token auth, is in runs.api, where the tokens are.)"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from contextadmin import selectors
from contextadmin.errors import json_response

logger = logging.getLogger(__name__)
HEALTH_REDIS_TIMEOUT_S = 1.0


def context_variables_schema(request: HttpRequest) -> HttpResponse:
    """Return the JSON Schema (draft 2020-12) of ``context_variables.json``."""
    return HttpResponse(
        selectors.schema_export_bytes(), content_type="application/schema+json; charset=utf-8"
    )


@never_cache
@require_safe
def health(request: HttpRequest) -> HttpResponse:
    """``GET /healthz`` (docs/deploy.md, Health checks): ``200`` while this process serves and
    reaches the database, ``"degraded"`` when only Redis is down (ingest still commits, live
    pushes stop); ``503`` when the database is unreachable. The reasons go to the log only."""
    database = _reachable("database", _database_ping)
    redis_state = _reachable("redis", _redis_ping) if settings.REDIS_URL else "not configured"
    status = "down" if database != "ok" else "degraded" if redis_state == "unreachable" else "ok"
    return json_response(
        {"status": status, "database": database, "redis": redis_state},
        status=503 if status == "down" else 200,
    )


def _reachable(name: str, ping: Callable[[], None]) -> str:
    try:
        ping()
    except (DatabaseError, redis.RedisError, OSError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        logger.warning("health check: %s unreachable: %s", name, reason)
        return "unreachable"
    return "ok"


def _database_ping() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis_ping() -> None:
    client = redis.Redis.from_url(
        settings.REDIS_URL,
        socket_timeout=HEALTH_REDIS_TIMEOUT_S,
        socket_connect_timeout=HEALTH_REDIS_TIMEOUT_S,
    )
    try:
        client.ping()
    finally:
        client.close()
