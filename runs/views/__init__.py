"""The inspector's pages and their staff JSON endpoints (thin: parse, call the selectors and the
engine, render), one module per page:

- ``home``: the front page and the favicon;
- ``run_pages``: the runs list, a run's page, its version, its warnings and template resolution;
- ``preview``: a workflow's context preview, development and production side by side;
- ``common``: the limits they share and ``staff_json``."""

from runs.views.common import (
    CATEGORY_ORDER,
    INSPECTOR_CONSTANTS,
    OVERRIDE_MAX_CHARS,
    STREAM_WINDOW,
    SYNTAXES,
    TEMPLATE_MAX_CHARS,
    staff_json,
)
from runs.views.home import (
    FAVICON,
    favicon,
    home,
)
from runs.views.preview import (
    workflow_fetch,
    workflow_preview,
)
from runs.views.run_pages import (
    run_detail,
    run_list,
    run_resolve,
    run_version,
    run_warnings,
)

__all__ = [
    "CATEGORY_ORDER",
    "FAVICON",
    "INSPECTOR_CONSTANTS",
    "OVERRIDE_MAX_CHARS",
    "STREAM_WINDOW",
    "SYNTAXES",
    "TEMPLATE_MAX_CHARS",
    "favicon",
    "home",
    "run_detail",
    "run_list",
    "run_resolve",
    "run_version",
    "run_warnings",
    "staff_json",
    "workflow_fetch",
    "workflow_preview",
]
