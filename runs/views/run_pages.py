"""The runs list, a run's page, and its staff JSON endpoints (its version, its warnings, template
resolution)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from contextadmin_sdk.engine import (
    resolve,
    resolve_system_message,
)
from contextadmin_sdk.engine.format import (
    CATEGORIES,
    OUTPUT_NAMESPACES,
)
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from contextadmin.errors import (
    BadRequest,
    NotFound,
    error_response,
    json_response,
)
from runs import run_definitions, selectors
from runs.models import Run
from runs.state import run_state_at
from runs.views.common import (
    INSPECTOR_CONSTANTS,
    STREAM_WINDOW,
    SYNTAXES,
    TEMPLATE_MAX_CHARS,
    staff_json,
)


def _run_or_404(run_id: str) -> Run:
    try:
        return selectors.run_get(run_id=run_id)
    except NotFound as exc:
        raise Http404(exc.message) from None


# -- runs -----------------------------------------------------------------------------------
@require_safe
@staff_member_required
def run_list(request: HttpRequest) -> HttpResponse:
    """One page of runs, newest first, searched by the query; live over /ws/runs/."""
    answer = request.GET.get("format", "")
    as_json = answer == "json"  # the page re-reads the list after a reconnect
    before = request.GET.get("before", "").strip()
    after = request.GET.get("after", "").strip()
    try:
        if answer not in ("", "json"):
            raise BadRequest(f"format: json, or leave it out for the page (got {answer[:40]!r})")
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
    # back at the newest runs through "Newer": the newest page (live), not an older one
    paged = bool(before) or bool(after and page.prev_cursor)
    return render(
        request,
        "runs/run_list.html",
        {
            "filters": search,
            "runs": runs,
            "error": error,
            "paged": paged,
            "older_query": urlencode({**query, "before": page.next_cursor})
            if page.next_cursor
            else "",
            "newer_query": urlencode({**query, "after": page.prev_cursor})
            if page.prev_cursor
            else "",
            "newest_query": urlencode(query),
            "list_meta": {
                "filters": search,
                "paged": paged,
                "stale_after_s": selectors.run_stale_after_s(),
                "now": timezone.now().isoformat(),  # stale and durations on the server's clock
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
        "now": timezone.now().isoformat(),  # stale and durations on the server's clock
        "variables": _variables_meta(definitions),
        # the rules as pinned at start: the graph's edges; their readiness comes with the state
        "handoffs": definitions.get("handoffs", []),
        # seed 004's output mappings as pinned: the Agent and world panel (none: no panel)
        "outputs": definitions.get("outputs", []),
        "warnings": run.warnings,
        # changes the chat made that the run refused (warning events): the header counts them,
        # as of the last event (the stored state can be some events behind)
        "warning_count": selectors.run_warning_count(run=run),
        # the events list keeps the latest events only: its "show all" loads at most this many
        "warnings_shown": selectors.WARNINGS_SHOWN,
        "stream_after": max(0, run.last_seq - STREAM_WINDOW),
        "constants": INSPECTOR_CONSTANTS,
    }
    return render(
        request,
        "runs/run_detail.html",
        {
            "run": run,
            "page": page,
            "ws_path": f"/ws/runs/{run.pk}/",
            "version": _run_version(run),
            "definitions_diff": run_definitions.run_definitions_diff(run=run),
            "runtime": run_definitions.runtime_label(run.runtime),
        },
    )


@staff_json
def run_version(request: HttpRequest, run_id: str) -> dict[str, Any]:
    """GET /api/runs/<id>/version/ — the version the run pinned and the one published now
    (the run page re-reads it to keep its "outdated" badge current)."""
    return _run_version(selectors.run_get(run_id=run_id))


@staff_json
def run_warnings(request: HttpRequest, run_id: str) -> dict[str, Any]:
    """GET /api/runs/<id>/warnings/ — the run's warnings, newest first (the latest
    ``WARNINGS_SHOWN``), and ``total``, the header's count: the run page's *show all warnings*
    (its events list keeps only the latest events)."""
    return selectors.run_warnings(run=selectors.run_get(run_id=run_id))


def _run_version(run: Run) -> dict[str, Any]:
    return run_definitions.run_version_describe(run=run)


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
    at = run_state_at(run=run, seq=seq)
    context, nodes = at.state["context"], at.state["nodes"]
    if syntax == "ref":  # {{agent.…}} and {{world.…}} read seed 004's namespaces
        namespaces = {name: at.state.get(name, {}) for name in OUTPUT_NAMESPACES}
        resolution = resolve(template, variables=context, node_outputs=nodes,
                             namespaces=namespaces)
    else:
        resolution = resolve_system_message(template, context)
    return {
        "seq": at.seq,
        "syntax": syntax,
        "text": resolution.text,
        "unresolved": resolution.unresolved,
    }
