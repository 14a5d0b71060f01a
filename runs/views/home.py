"""The front page (workflows, runs live now, recent changes, the first-run checklist) and the
favicon."""

from __future__ import annotations

import shlex

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from contextadmin.errors import json_response
from runs import selectors
from runs.webhooks import selectors as webhook_selectors

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
    """The operator's front door: workflows, runs live now, recent changes, a first-run list;
    ``?format=json``: its live parts, which the page re-reads (a runs-list message lost on
    the way, in a Redis restart or while the page reconnected, is never sent again)."""
    live = [selectors.run_summary(run=run) for run in selectors.runs_live()]
    # fewer than the page lists are all of them: no second query
    full = len(live) >= selectors.LIVE_SHOWN
    live_total = selectors.runs_live_count() if full else len(live)
    # the server's time: the page reads stale and durations on it, whatever the browser's clock
    now = timezone.now().isoformat()
    live_meta = {"total": live_total, "shown": selectors.LIVE_SHOWN, "now": now}
    workflows = selectors.workflow_rows()
    if request.GET.get("format") == "json":
        last_runs = selectors.workflow_last_runs(rows=workflows)
        return json_response({"live": live, "live_meta": live_meta, "last_runs": last_runs})
    return render(
        request,
        "home.html",
        {
            "workflows": workflows,
            "live": live,
            "live_meta": live_meta,
            "changes": selectors.recent_changes(),
            "checklist": selectors.first_run_checklist(),
            "server_url": request.build_absolute_uri("/").rstrip("/"),
            "demo_env": _demo_mongo_env(settings.MONGODB_URI),
            "stale_after_s": selectors.run_stale_after_s(),
            "webhooks_off": list(webhook_selectors.subscriptions_switched_off()),
        },
    )


def _demo_mongo_env(uri: str) -> str:
    """What the demo runtime needs in front of its command to look up ``concept_overview`` in
    the server's MongoDB, as ``scripts/run`` prints it; empty when none is configured or the
    URI carries a password (never shown)."""
    if not uri or "@" in uri:
        return ""
    return f"MONGODB_URI={shlex.quote(uri)} "
