"""The client errors and their one JSON renderer now live in ``contextadmin.errors`` (below both
apps, so the definitions app's middleware renders with them too). This name stays only until
the last importers (``runs.services.ingest``, ``runs.batching``) import that module directly."""

from contextadmin.errors import (  # noqa: F401
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    RateLimited,
    TooLarge,
    Unauthorized,
    error_response,
    json_response,
)
