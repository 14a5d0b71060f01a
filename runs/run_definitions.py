"""Reads about what a run ran with: the definitions it pinned (a version of this server, or the
runtime's own, "not published here") against the version published now, and its runtime.

The run page's header and its "outdated" badge show what these say (docs/versions.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from contextadmin.models import Workflow
from contextadmin.selectors import documents_diff
from runs.models import Run
from runs.selectors import run_published_version

__all__ = ["FRAMEWORK_LABELS", "run_definitions_diff", "run_version_describe", "runtime_label"]

FRAMEWORK_LABELS = {"ag2": "AG2", "autogen": "AG2 Classic"}


def run_version_describe(*, run: Run) -> dict[str, Any]:
    """The version the run pinned (a link to it in the workflow's History), the one published
    now, whether a newer one is (the run keeps its own), and whether the run's definitions
    are published here at all."""
    number = run.workflow_version
    published = run_published_version(run=run)
    url = ""
    if number is not None and run.workflow_id is not None:
        history = reverse("admin:contextadmin_workflow_history", args=[run.workflow_id])
        url = f"{history}?{urlencode({'to': number})}"
    not_published_here = run.definitions_source == Run.DefinitionsSource.RUNTIME
    outdated = number is not None and published is not None and published > number
    declared = (run.definitions_declared or {}).get("number")
    return {
        "number": number,
        "url": url,
        "published": published,
        "outdated": outdated,
        "outdated_text": (
            f"outdated: ran version {number}, version {published} is published" if outdated else ""
        ),
        "not_published_here": not_published_here,
        "edited_from": declared if not_published_here and isinstance(declared, int) else None,
    }


def run_definitions_diff(*, run: Run) -> list[str]:
    """For a run whose definitions are not published here: how the version published now
    differs from them, one line per difference ([] otherwise, or with nothing published)."""
    if run.definitions_source != Run.DefinitionsSource.RUNTIME or run.workflow_id is None:
        return []
    export = (
        Workflow.objects.filter(pk=run.workflow_id)
        .values_list("published_version__export", flat=True)
        .first()
    )
    if not export:
        return []
    published: Mapping[str, Any] = json.loads(export)
    return documents_diff(before=published, after=run.definitions or {}).lines()


def runtime_label(runtime: Mapping[str, Any] | None) -> str:
    """Say which runtime reported a run: ``AG2 1.2.1 · SDK 0.1.0`` ("" when none said)."""
    if not runtime or not runtime.get("framework"):
        return ""
    framework = str(runtime["framework"])
    label = FRAMEWORK_LABELS.get(framework, framework)
    if runtime.get("version"):
        label += f" {runtime['version']}"
    if runtime.get("sdk"):
        label += f" · SDK {runtime['sdk']}"
    return label
