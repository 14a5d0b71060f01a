"""A workflow's context preview: development and production side by side, with live MongoDB
look-ups and the hand-offs' readiness."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from contextadmin_sdk.engine import (
    build_context,
    fetch_database_variables,
    handoffs_readiness,
)
from contextadmin_sdk.engine.format import (
    ENTERPRISE_ID_MAX_CHARS,
    ENVIRONMENTS,
    ConfigError,
    ContextVariablesFile,
    enterprise_id_problem,
)
from contextadmin_sdk.engine.loader import BASE_FLAGS, NO_MONGO_REASON
from contextadmin_sdk.engine.mongo import database_source
from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from contextadmin.errors import (
    BadRequest,
    NotFound,
)
from contextadmin.selectors import workflow_config, workflow_get
from runs.mongo import mongo_client_get
from runs.views.common import (
    CATEGORY_ORDER,
    OVERRIDE_MAX_CHARS,
    staff_json,
)


# -- workflow preview -----------------------------------------------------------------------
def _config_or_404(name: str) -> tuple[ContextVariablesFile | None, list[str]]:
    workflow = workflow_get(name=name)
    if workflow is None:
        raise Http404(f"no workflow named {name!r}")
    try:
        return workflow_config(workflow=workflow), []
    except ConfigError as exc:
        return None, [str(issue) for issue in exc.issues]


def _env_fields(config: ContextVariablesFile | None) -> list[dict[str, str]]:
    """One override field per environment variable the context reads (base flags included)."""
    fields = {env_var: name for name, env_var in BASE_FLAGS.items()}
    if config is not None:
        for variable in config.context_variables.environment_variables:
            fields[variable.source.env_var] = variable.name
    return [{"env_var": env_var, "variable": name} for env_var, name in fields.items()]


@require_safe
@staff_member_required
def workflow_preview(request: HttpRequest, name: str) -> HttpResponse:
    """The context a run of this workflow would get now, in development and in production."""
    config, errors = _config_or_404(name)
    enterprise_id = request.GET.get("enterprise_id", "").strip()[:ENTERPRISE_ID_MAX_CHARS] or "acme"
    fields = _env_fields(config)
    overrides: dict[str, str] = {}
    for field in fields:
        raw = request.GET.get(field["env_var"], "")
        field["value"] = raw[:OVERRIDE_MAX_CHARS]
        field["current"] = os.environ.get(field["env_var"], "")
        if raw != "":
            overrides[field["env_var"]] = field["value"]
    built = {
        environment: build_context(
            config if config is not None else {},
            workflow_name=name,
            enterprise_id=enterprise_id,
            environ={**os.environ, **overrides, "ENVIRONMENT": environment},
            mongo=None,  # look-ups run on demand ("fetch now"): the page never waits on MongoDB
        )
        for environment in ENVIRONMENTS
    }
    return render(
        request,
        "runs/workflow_preview.html",
        {
            "name": name,
            "enterprise_id": enterprise_id,
            "fields": fields,
            "errors": errors,
            "rows": _preview_rows(config, built, mongo_configured=bool(settings.MONGODB_URI)),
            "handoffs": _preview_handoffs(config, built),
            "warnings": {env: built[env].warnings for env in ENVIRONMENTS},
            "mongo_configured": bool(settings.MONGODB_URI),
            "environments": ENVIRONMENTS,
        },
    )


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _preview_rows(
    config: ContextVariablesFile | None, built: Mapping[str, Any], *, mongo_configured: bool
) -> list[dict]:
    """One row per variable: its category and its value + provenance in each environment."""
    described = {}
    if config is not None:
        described = {v.name: v for _, _, v in config.variables()}
    names: dict[str, str] = {}
    for context in built.values():
        for name, entry in context.provenance.items():
            names.setdefault(name, entry["category"])
    rows = []
    for name, category in sorted(names.items(), key=lambda i: CATEGORY_ORDER.index(i[1])):
        cells = []
        for environment in ENVIRONMENTS:
            context = built[environment]
            entry = dict(context.provenance.get(name) or {"status": "absent", "source": ""})
            if mongo_configured and entry.get("reason") == NO_MONGO_REASON:
                entry["status"], entry["reason"] = "pending", "not looked up yet: fetch now"
            has_value = name in context.values
            cells.append(
                {
                    "environment": environment,
                    "has_value": has_value,
                    "value": _shown(context.values[name]) if has_value else "",
                    **entry,
                }
            )
        variable = described.get(name)
        rows.append(
            {
                "name": name,
                "category": category,
                "type": getattr(variable, "type", ""),
                "description": getattr(variable, "description", ""),
                "cells": cells,
            }
        )
    return rows


def _preview_handoffs(config: ContextVariablesFile | None, built: Mapping[str, Any]) -> list[dict]:
    """Each rule as the engine judges it at the start of a run, one cell per environment."""
    if config is None:
        return []
    readiness = {env: handoffs_readiness(config, built[env].values) for env in ENVIRONMENTS}
    return [
        {
            "source": rule["source_agent"],
            "target": rule["target_agent"],
            "condition": rule["condition"],
            "description": rule["description"],
            "cells": [_readiness_cell(env, readiness[env][rule["index"]]) for env in ENVIRONMENTS],
        }
        for rule in readiness[ENVIRONMENTS[0]]
    ]


def _readiness_cell(environment: str, rule: Mapping[str, Any]) -> dict[str, Any]:
    status = rule["status"]
    return {
        "environment": environment,
        "status": status,
        "label": f"never in {environment}" if status == "never" else status,
        "reason": rule["reason"] or "",
    }


@staff_json
def workflow_fetch(request: HttpRequest, name: str) -> dict[str, Any]:
    """GET /workflows/<name>/preview/fetch/?variable=...&enterprise_id=... — a real look-up."""
    workflow = workflow_get(name=name)
    if workflow is None:
        raise NotFound(f"name: no workflow named {name!r}")
    variable_name = request.GET.get("variable", "")
    if not variable_name:
        raise BadRequest("variable: required (a database variable's name)")
    enterprise_id = request.GET.get("enterprise_id", "").strip() or "acme"
    problem = enterprise_id_problem(enterprise_id)
    if problem is not None:
        raise BadRequest(f"enterprise_id: {problem}")
    try:
        config = workflow_config(workflow=workflow)
    except ConfigError as exc:
        raise BadRequest(f"definitions: invalid ({exc.issues[0]})") from None
    section = config.context_variables
    variable = next((v for v in section.database_variables if v.name == variable_name), None)
    if variable is None:
        raise BadRequest(f"variable: {variable_name[:64]!r} is not a database variable of {name}")
    mongo = mongo_client_get()
    if mongo is None:
        database, collection, _, field = database_source(
            variable, default_database=section.database_name
        )
        return {
            "variable": variable.name,
            "status": "unresolved",
            "value": None,
            "source": f"db.{database}.{collection}.{field}",
            "reason": f"{NO_MONGO_REASON} (MONGODB_URI is unset)",
        }
    lookup = fetch_database_variables(
        mongo, [variable], enterprise_id=enterprise_id, default_database=section.database_name
    )[variable.name]
    return {
        "variable": variable.name,
        "status": lookup.status,
        "value": lookup.value,
        "source": lookup.source,
        "reason": lookup.reason,
    }
