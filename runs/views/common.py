"""What the inspector's views share: their limits, the constants the pages' scripts get, and
``staff_json`` (a view's dict as JSON, for staff sessions only)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from contextadmin_sdk.engine import (
    EVENT_TYPES,
    RUN_ENDED_STATUSES,
    RUN_STATUSES,
)
from contextadmin_sdk.engine.format import (
    CATEGORIES,
    ENVIRONMENTS,
    OUTPUT_NAMESPACES,
)
from contextadmin_sdk.engine.format.limits import EXCHANGES_MAX, PATH_MAX_EDGES
from contextadmin_sdk.engine.loader import BASE_FLAGS
from contextadmin_sdk.engine.state import NAMESPACES
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from contextadmin.errors import (
    ApiError,
    error_response,
    json_response,
)
from runs.auth import authenticate

TEMPLATE_MAX_CHARS = 4000
OVERRIDE_MAX_CHARS = 500
STREAM_WINDOW = 1000  # the run page streams at most this many past events; time travel reaches all
# provenance categories as the inspector groups them: the run's base values, the four declared
# categories of the format, then whatever the runtime supplied at start
CATEGORY_ORDER = ("base", *CATEGORIES, "supplied")
SYNTAXES = ("auto", "ref", "system")
# The names the scripts group and filter by, owned by the engine (rendered into the page).
INSPECTOR_CONSTANTS = {
    "categories": CATEGORY_ORDER,
    "namespaces": NAMESPACES,
    "output_namespaces": OUTPUT_NAMESPACES,  # seed 004's agent and world: their own panel
    "environments": ENVIRONMENTS,
    "event_types": EVENT_TYPES,
    "base_flags": BASE_FLAGS,  # name -> environment variable: every run's, declared or not
    "ended_statuses": [status for status in RUN_STATUSES if status in RUN_ENDED_STATUSES],
    # what the state keeps of the agents (the page follows the live events as the engine does)
    "path_max_edges": PATH_MAX_EDGES,  # execution.path: the latest hand-offs
    "exchanges_max": EXCHANGES_MAX,  # execution.exchanges: the first speaker pairs
}


def staff_json(view: Callable[..., dict[str, Any]]) -> Callable[..., HttpResponse]:
    """Serve a view's dict as JSON to staff sessions only (``runs.auth.authenticate``, the one
    check of who may call; no token); ApiError becomes a JSON 4xx."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            authenticate(authorization=None, user=request.user, session_allowed=True)
            return json_response(view(request, *args, **kwargs))
        except ApiError as exc:
            return error_response(exc)

    return require_safe(wrapper)
