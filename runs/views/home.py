"""The front page (workflows, runs live now, recent changes, the first-run checklist) and the
favicon."""

from __future__ import annotations

import shlex

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

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
    """The operator's front door: workflows, runs live now, recent changes, a first-run list."""
    live = [selectors.run_summary(run=run) for run in selectors.runs_live()]
    # fewer than the page lists are all of them: no second query
    full = len(live) >= selectors.LIVE_SHOWN
    live_total = selectors.runs_live_count() if full else len(live)
    return render(
        request,
        "home.html",
        {
            "workflows": selectors.workflow_rows(),
            "live": live,
            "live_meta": {"total": live_total, "shown": selectors.LIVE_SHOWN},
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
