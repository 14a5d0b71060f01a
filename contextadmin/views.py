"""HTTP: the workflow export (deployment pipelines, admin buttons) and the format's JSON Schema."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from contextadmin import selectors
from contextadmin.models import Workflow
from contextadmin.schema import ConfigError


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def _authorize(request: HttpRequest, workflow: Workflow | None) -> JsonResponse | None:
    """Return an error response unless the request may read this workflow's definitions.

    A staff session may read every workflow. (Bearer tokens for deployment pipelines plug in
    here: accept ``Authorization: Bearer ...`` before the session check.)
    """
    user = request.user
    if not user.is_authenticated:
        response = _error(401, "authentication required: log in as a staff user")
        response["WWW-Authenticate"] = 'Bearer realm="contextadmin"'
        return response
    if not user.is_staff:
        return _error(403, "forbidden: staff users only")
    return None


def workflow_context_variables(request: HttpRequest, name: str) -> HttpResponse:
    """Return a workflow's ``context_variables.json`` as an attachment."""
    if request.method not in ("GET", "HEAD"):
        response = _error(405, f"method {request.method} not allowed: use GET")
        response["Allow"] = "GET, HEAD"
        return response
    workflow = selectors.workflow_get(name=name)
    denied = _authorize(request, workflow)
    if denied is not None:
        return denied
    if workflow is None:
        return _error(404, f"name: no workflow named {name!r}", field="name")
    environment = request.GET.get("environment", "development")
    try:
        body = selectors.workflow_export(workflow=workflow, environment=environment)
    except selectors.UnknownEnvironment as exc:
        return _error(400, f"environment: {exc}", field="environment")
    except ConfigError as exc:
        return _error(
            409,
            f"the definitions of {name} break the format; fix them in the admin",
            issues=[{"path": issue.path, "message": issue.message} for issue in exc.issues],
        )
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="context_variables.json"'
    response["Cache-Control"] = "private, no-cache"
    return response


def context_variables_schema(request: HttpRequest) -> HttpResponse:
    """Return the JSON Schema (draft 2020-12) of ``context_variables.json``."""
    return HttpResponse(
        selectors.schema_export_bytes(), content_type="application/schema+json; charset=utf-8"
    )
