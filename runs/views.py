"""The inspector: live run pages, a workflow's context preview, and their staff JSON endpoints."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from contextadmin.selectors import workflow_config, workflow_get
from runs import selectors
from runs.engine import (
    EVENT_TYPES,
    build_context,
    fetch_database_variables,
    handoffs_readiness,
    resolve,
    resolve_system_message,
)
from runs.engine.format import CATEGORIES, ENVIRONMENTS, ConfigError, ContextVariablesFile
from runs.engine.loader import BASE_FLAGS, NO_MONGO_REASON
from runs.engine.mongo import database_source
from runs.engine.state import NAMESPACES
from runs.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    NotFound,
    Unauthorized,
    error_response,
    json_response,
)
from runs.models import Run
from runs.services.caches import mongo_client_get
from runs.webhooks import selectors as webhook_selectors

TEMPLATE_MAX_CHARS = 4000
ENTERPRISE_ID_MAX_CHARS = 200
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
    "environments": ENVIRONMENTS,
    "event_types": EVENT_TYPES,
    "base_flags": BASE_FLAGS,  # name -> environment variable: every run's, declared or not
}


def staff_json(view: Callable[..., dict[str, Any]]) -> Callable[..., HttpResponse]:
    """Serve a view's dict as JSON to staff sessions only; ApiError becomes a JSON 4xx."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            if not request.user.is_authenticated:
                raise Unauthorized("session: log in as a staff user")
            if not request.user.is_staff:
                raise Forbidden("session: staff access required")
            return json_response(view(request, *args, **kwargs))
        except ApiError as exc:
            return error_response(exc)

    return require_safe(wrapper)


def _run_or_404(run_id: str) -> Run:
    try:
        return selectors.run_get(run_id=run_id)
    except NotFound as exc:
        raise Http404(exc.message) from None


FAVICON = (settings.BASE_DIR / "static" / "inspector" / "favicon.svg").read_bytes()


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico: browsers ask for it on every page (the admin's too); answer, not 404."""
    response = HttpResponse(FAVICON, content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


# -- the front page ---------------------------------------------------------------------------
@require_safe
@staff_member_required
def home(request: HttpRequest) -> HttpResponse:
    """The operator's front door: workflows, runs live now, recent changes, a first-run list."""
    live = [selectors.run_summary(run=run) for run in selectors.runs_live()]
    return render(
        request,
        "home.html",
        {
            "workflows": selectors.workflow_rows(),
            "live": live,
            "changes": selectors.recent_changes(),
            "checklist": selectors.first_run_checklist(),
            "server_url": request.build_absolute_uri("/").rstrip("/"),
            "stale_after_s": selectors.run_stale_after_s(),
            "webhooks_off": list(webhook_selectors.subscriptions_switched_off()),
        },
    )


# -- runs -----------------------------------------------------------------------------------
@require_safe
@staff_member_required
def run_list(request: HttpRequest) -> HttpResponse:
    """One page of runs, newest first, searched by the query; live over /ws/runs/."""
    as_json = request.GET.get("format") == "json"  # the page re-reads the list after a reconnect
    before = request.GET.get("before", "").strip()
    after = request.GET.get("after", "").strip()
    try:
        search = selectors.run_search_parse(request.GET)
        page = selectors.run_page(search=search, before=before, after=after)
    except BadRequest as exc:
        if as_json:
            return error_response(exc)
        search = {key: request.GET.get(key, "").strip()[:200] for key in selectors.RUN_SEARCH}
        page, error = selectors.RunPage(runs=[], next_cursor=None), exc.message
    else:
        error = ""
    runs = [selectors.run_summary(run=run) for run in page.runs]
    if as_json:
        return json_response({"runs": runs, "next": page.next_cursor, "prev": page.prev_cursor})
    query = {key: value for key, value in search.items() if value}
    return render(
        request,
        "runs/run_list.html",
        {
            "filters": search,
            "runs": runs,
            "error": error,
            "paged": bool(before or after),
            "older_query": urlencode({**query, "before": page.next_cursor})
            if page.next_cursor
            else "",
            "newer_query": urlencode({**query, "after": page.prev_cursor})
            if page.prev_cursor
            else "",
            "newest_query": urlencode(query),
            "list_meta": {
                "filters": search,
                "paged": bool(before or after),
                "stale_after_s": selectors.run_stale_after_s(),
            },
            "workflows": selectors.run_workflow_names(),
            "flags": selectors.run_flag_names(),
            "statuses": Run.Status.values,
            "environments": Run.Environment.values,
        },
        status=400 if error else 200,
    )


@require_safe
@staff_member_required
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    """One run: context with provenance, flags timeline, event stream, hand-offs, time travel."""
    run = _run_or_404(run_id)
    run.last_event_at = selectors.run_last_event_at(run=run)  # type: ignore[attr-defined]
    definitions = run.definitions or {}
    page = {
        "run": selectors.run_summary(run=run),
        "stale_after_s": selectors.run_stale_after_s(),
        "variables": _variables_meta(definitions),
        # the rules as pinned at start: the graph's edges; their readiness comes with the state
        "handoffs": definitions.get("handoffs", []),
        "warnings": run.warnings,
        "stream_after": max(0, run.last_seq - STREAM_WINDOW),
        "constants": INSPECTOR_CONSTANTS,
    }
    return render(
        request,
        "runs/run_detail.html",
        {"run": run, "page": page, "ws_path": f"/ws/runs/{run.pk}/", "version": _run_version(run)},
    )


@staff_json
def run_version(request: HttpRequest, run_id: str) -> dict[str, Any]:
    """GET /api/runs/<id>/version/ — the version the run pinned and the one published now
    (the run page re-reads it to keep its "outdated" badge current)."""
    return _run_version(selectors.run_get(run_id=run_id))


def _run_version(run: Run) -> dict[str, Any]:
    """The version the run pinned, a link to it in the workflow's History, and whether a newer
    version is published now (the run keeps the one it started with)."""
    number = run.workflow_version
    published = selectors.run_published_version(run=run)
    url = ""
    if number is not None and run.workflow_id is not None:
        history = reverse("admin:contextadmin_workflow_history", args=[run.workflow_id])
        url = f"{history}?{urlencode({'to': number})}"
    return {
        "number": number,
        "url": url,
        "published": published,
        "outdated": number is not None and published is not None and published > number,
    }


def _variables_meta(definitions: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Map each declared variable to its category, type, description (and derived default)."""
    section = definitions.get("context_variables") or {}
    meta: dict[str, dict[str, Any]] = {}
    for category in CATEGORIES:
        for variable in section.get(f"{category}_variables", []):
            meta[variable["name"]] = {
                "category": category,
                "type": variable.get("type", "string"),
                "description": variable.get("description", ""),
                "default": variable.get("default"),
            }
    return meta


@staff_json
def run_resolve(request: HttpRequest, run_id: str) -> dict[str, Any]:
    """GET /api/runs/<id>/resolve/?at=N&template=...&syntax=auto|ref|system."""
    run = selectors.run_get(run_id=run_id)
    seq = selectors.parse_seq(request.GET.get("at"))
    template = request.GET.get("template")
    if template is None:
        raise BadRequest("template: required (a {{ref}} or {name} template)")
    if len(template) > TEMPLATE_MAX_CHARS:
        raise BadRequest(f"template: {len(template)} characters, at most {TEMPLATE_MAX_CHARS}")
    syntax = request.GET.get("syntax") or "auto"
    if syntax not in SYNTAXES:
        raise BadRequest(f"syntax: must be one of {', '.join(SYNTAXES)}, got {syntax[:20]!r}")
    if syntax == "auto":
        syntax = "ref" if "{{" in template else "system"
    at = selectors.run_state_at(run=run, seq=seq)
    context, nodes = at.state["context"], at.state["nodes"]
    if syntax == "ref":
        resolution = resolve(template, variables=context, node_outputs=nodes)
    else:
        resolution = resolve_system_message(template, context)
    return {
        "seq": at.seq,
        "syntax": syntax,
        "text": resolution.text,
        "unresolved": resolution.unresolved,
    }


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
    if len(enterprise_id) > ENTERPRISE_ID_MAX_CHARS:
        raise BadRequest(f"enterprise_id: at most {ENTERPRISE_ID_MAX_CHARS} characters")
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
