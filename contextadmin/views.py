"""HTTP: the workflow export (deployment pipelines, admin buttons) and the format's JSON Schema."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from contextadmin import selectors
from contextadmin.models import Workflow
from runs.api import bearer_secret, caller_authenticate, error_response
from runs.engine.format import ConfigError
from runs.errors import ApiError


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def _authorize(request: HttpRequest, workflow: Workflow | None) -> JsonResponse | None:
    """Return an error response unless the request may read this workflow's definitions.

    A staff session may read every workflow; a runtime or pipeline sends its API token as
    ``Authorization: Bearer ...`` (rate-limited like the run API), and a token scoped to a
    workflow may read only that one.
    """
    if bearer_secret(request.headers.get("Authorization")):  # other schemes: a proxy's, say
        try:
            caller = caller_authenticate(request, allow_session=False)
        except ApiError as exc:
            return error_response(exc)
        token = caller.token
        if token is not None and token.workflow_id is not None and (
            workflow is None or token.workflow_id != workflow.pk
        ):
            return _error(403, f"this token is scoped to workflow {token.workflow.name!r}")
        return None
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
