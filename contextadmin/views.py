"""HTTP: the format's JSON Schema. (The workflow export, with its token auth, is in runs.api,
where the tokens are.)"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from contextadmin import selectors


def context_variables_schema(request: HttpRequest) -> HttpResponse:
    """Return the JSON Schema (draft 2020-12) of ``context_variables.json``."""
    return HttpResponse(
        selectors.schema_export_bytes(), content_type="application/schema+json; charset=utf-8"
    )
