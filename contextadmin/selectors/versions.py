"""Versions: the newest, the published one, their diff, and the export that pipelines and new
runs get (one query: the export is stored with the version)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from contextadmin_sdk.engine import format as fmt
from django.conf import settings

from contextadmin.models import (
    Workflow,
    WorkflowVersion,
)
from contextadmin.selectors.diff import ConfigDiff, documents_diff
from contextadmin.selectors.workflows import ENVIRONMENTS, UnknownEnvironment, workflow_export


# -- versions -----------------------------------------------------------------------------------
class VersionNotFound(LookupError):
    """The asked version does not exist, or there is no published version to serve."""


@dataclass(frozen=True)
class ExportedVersion:
    """A version's export as served: the body, its version number and a strong ETag."""

    body: bytes
    number: int | None  # None: a workflow without any version (created outside the admin)
    etag: str
    status: str  # published, draft, superseded or unversioned


def review_required() -> bool:
    """Tell whether a save waits for a second operator's approval (CONTEXTADMIN_REVIEW=on)."""
    return getattr(settings, "CONTEXTADMIN_REVIEW", "off") == "on"


def workflow_head(*, workflow: Workflow) -> WorkflowVersion | None:
    """Return the newest version of a workflow (the one its rows hold), or None."""
    return (
        WorkflowVersion.objects.filter(workflow=workflow)
        .select_related("author", "approved_by")
        .order_by("-number")
        .first()
    )


def workflow_head_number(*, workflow: Workflow) -> int:
    """Return the newest version number (0: none yet): the page's concurrency token."""
    head = (
        WorkflowVersion.objects.filter(workflow=workflow)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    return head or 0


def workflow_versions(*, workflow: Workflow, limit: int = 200) -> list[WorkflowVersion]:
    """Return the newest versions first, without their exports (one query)."""
    return list(
        WorkflowVersion.objects.filter(workflow=workflow)
        .defer("export", "export_production")
        .select_related("author", "approved_by")
        .order_by("-number")[:limit]
    )


def workflow_version_matching(
    *, workflow: Workflow | None, digest: str, number: int | None = None
) -> int | None:
    """Return the number of the workflow's version whose export has this SHA-256 ``digest``:
    ``number`` when that one matches, else the newest that does; None when none does."""
    if workflow is None:
        return None
    numbers = list(
        WorkflowVersion.objects.filter(workflow=workflow, digest=digest)
        .order_by("-number")
        .values_list("number", flat=True)
    )
    if number in numbers:
        return number
    return numbers[0] if numbers else None


def version_status(*, workflow: Workflow, version: WorkflowVersion) -> str:
    """Say what a version is to pipelines: published, draft (newer) or superseded (older)."""
    published = workflow.published_version_id
    if published == version.pk:
        return "published"
    if published is None:
        return "draft"
    # The published version's number is not loaded: compare by id order within the workflow.
    return "draft" if version.pk > published else "superseded"


def version_document(*, version: WorkflowVersion | None) -> dict[str, Any]:
    """Return a version's stored export as a document ({} for none)."""
    return json.loads(version.export) if version is not None else {}


def versions_diff(*, before: WorkflowVersion | None, after: WorkflowVersion) -> ConfigDiff:
    """Compare two versions from their stored exports (no definitions rows are read)."""
    return documents_diff(
        before=version_document(version=before), after=version_document(version=after)
    )


def version_parse(text: str) -> int | str | None:
    """Read a ``version`` parameter: empty -> published, ``draft``, or a positive number."""
    text = (text or "").strip()
    if not text or text == "published":
        return None
    if text == "draft":
        return "draft"
    # ASCII digits only: str.isdigit() also accepts superscripts ("²", which int() refuses)
    # and other scripts' digits.
    if text.isascii() and text.isdigit() and 0 < int(text) < 2**31:
        return int(text)
    raise VersionNotFound(
        f"version: expected a version number, 'draft' or 'published', got {text!r}"
    )


def workflow_export_version(
    *,
    workflow: Workflow,
    environment: str = "development",
    version: int | str | None = None,
) -> ExportedVersion:
    """Return the export that pipelines and new runs get: the published version by default.

    ``version`` is a number, ``"draft"`` (the newest version, published or not) or None (the
    published one). One query whatever the size of the workflow: the export is stored with the
    version. A workflow that has never had a version (rows written outside the admin, say) is
    served from its rows, with ``number`` None. The body starts with the ``version`` key (the
    number and the digest of the definitions) that a runtime sends back at run start.
    """
    if environment not in ENVIRONMENTS:
        raise UnknownEnvironment(
            f"one of {', '.join(ENVIRONMENTS)}, got {environment!r}"
        )
    rows = WorkflowVersion.objects.filter(workflow=workflow)
    if version is None:
        found = (
            rows.filter(pk=workflow.published_version_id).first()
            if (workflow.published_version_id)
            else None
        )
        if found is None:
            if rows.exists():
                raise VersionNotFound(
                    f"version: {workflow.name} has no published version yet "
                    "(a draft awaits review: ask for the version 'draft' to see it)"
                )
            body = fmt.export_with_version(
                workflow_export(workflow=workflow, environment=environment), number=None
            )
            return ExportedVersion(body, None, _etag(body), "unversioned")
    elif version == "draft":
        found = rows.order_by("-number").first()
        if found is None:
            body = fmt.export_with_version(
                workflow_export(workflow=workflow, environment=environment), number=None
            )
            return ExportedVersion(body, None, _etag(body), "unversioned")
    elif isinstance(version, int) and not isinstance(version, bool):
        found = rows.filter(number=version).first()
        if found is None:
            raise VersionNotFound(f"version: {workflow.name} has no version {version}")
    else:
        raise VersionNotFound(f"version: expected a number or 'draft', got {version!r}")
    body = fmt.export_with_version(
        found.export_for(environment).encode("utf-8"), number=found.number
    )
    return ExportedVersion(
        body, found.number, _etag(body), version_status(workflow=workflow, version=found)
    )


def workflow_published_config(*, workflow: Workflow) -> tuple[fmt.ContextVariablesFile, int | None]:
    """Return the published definitions and their version number, for a run to pin at start."""
    exported = workflow_export_version(workflow=workflow)
    return fmt.parse_config(exported.body).config, exported.number


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def recent_changes(*, limit: int = 100) -> list[WorkflowVersion]:
    """Return the newest versions across all workflows, for the audit trail (one query)."""
    return list(
        WorkflowVersion.objects.defer("export", "export_production")
        .select_related("workflow", "author", "approved_by")
        .order_by("-created", "-pk")[:limit]
    )
