"""The process's MongoDB client, for the database variables of the contexts the server builds
(a run started without a context, the preview page)."""

from __future__ import annotations

from typing import Any

from contextadmin_sdk.engine import mongo_client
from django.conf import settings

_mongo_clients: dict[str, Any] = {}


def mongo_client_get() -> Any:
    """Return the process's MongoDB client (None when MONGODB_URI is unset).

    pymongo clients are thread-safe and pool their connections: one per process and URI.
    """
    uri = settings.MONGODB_URI
    if not uri:
        return None
    if uri not in _mongo_clients:
        _mongo_clients[uri] = mongo_client(uri, timeout_ms=settings.MONGODB_TIMEOUT_MS)
    return _mongo_clients[uri]

