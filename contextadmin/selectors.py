"""Reads: a workflow's definitions as a config, its export, and diffs against incoming files."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from pydantic import ValidationError

from contextadmin import specs
from contextadmin.models import (
    Handoff,
    OutputMapping,
    Trigger,
    Variable,
    Workflow,
    WorkflowVersion,
)
from contextadmin.outputs import outputs_diff
from runs.engine import format as fmt

ENVIRONMENTS = fmt.ENVIRONMENTS


class UnknownEnvironment(ValueError):
    """An export was asked for an environment other than development or production."""


def workflow_get(*, name: str) -> Workflow | None:
    """Return the workflow with this name, or None."""
    return Workflow.objects.filter(name=name).first()


def workflow_has_definitions(*, workflow: Workflow) -> bool:
    """Tell whether a workflow has any variables, hand-offs or output mappings."""
    return (
        workflow.variables.exists() or workflow.handoffs.exists() or workflow.outputs.exists()
    )


def workflow_document(*, workflow: Workflow) -> dict[str, Any]:
    """Return the workflow's definitions as an unvalidated document (three queries).

    The triggers come in one query grouped here by variable, not by ``prefetch_related``,
    which builds a related manager and a queryset per variable: two thirds of a 1,000-variable
    export (docs/benchmarks.md, B5).
    """
    variables = Variable.objects.filter(workflow=workflow).order_by("position", "id")
    triggers: defaultdict[int, list[Trigger]] = defaultdict(list)
    for trigger in Trigger.objects.filter(variable__workflow=workflow).order_by("position", "id"):
        triggers[trigger.variable_id].append(trigger)
    handoffs = Handoff.objects.filter(workflow=workflow).order_by("position", "id")
    outputs = OutputMapping.objects.filter(workflow=workflow).order_by("position", "id")
    return specs.document_data(
        database_name=workflow.database_name,
        variables=((v, triggers[v.pk]) for v in variables),
        handoffs=handoffs,
        outputs=outputs,
    )


def workflow_config(*, workflow: Workflow) -> fmt.ContextVariablesFile:
    """Return the workflow's definitions, validated; raise ConfigError if they break a rule."""
    return fmt.parse_config(workflow_document(workflow=workflow)).config


def workflow_export(*, workflow: Workflow, environment: str = "development") -> bytes:
    """Return the canonical ``context_variables.json`` of a workflow for an environment."""
    if environment not in ENVIRONMENTS:
        raise UnknownEnvironment(
            f"environment must be one of {', '.join(ENVIRONMENTS)}, got {environment!r}"
        )
    config = workflow_config(workflow=workflow)
    return fmt.config_export_bytes(config, production=environment == "production")


def schema_export_bytes() -> bytes:
    """Return the JSON Schema of the format as checked in at docs/context_variables.schema.json."""
    return (json.dumps(fmt.json_schema(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# -- diff -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiffEntry:
    """One difference: ``change`` is added, removed or changed; ``details`` say what changed."""

    change: str
    subject: str
    details: tuple[str, ...] = ()

    def __str__(self) -> str:
        symbol = {"added": "+", "removed": "-", "changed": "~"}[self.change]
        text = f"{symbol} {self.subject}"
        return f"{text}: {'; '.join(self.details)}" if self.details else text


@dataclass(frozen=True)
class ConfigDiff:
    """The differences between a workflow's definitions and an incoming config."""

    entries: tuple[DiffEntry, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.entries)

    def of(self, change: str) -> list[DiffEntry]:
        """Return the entries of one kind of change."""
        return [entry for entry in self.entries if entry.change == change]

    @property
    def added(self) -> list[DiffEntry]:
        return self.of("added")

    @property
    def removed(self) -> list[DiffEntry]:
        return self.of("removed")

    @property
    def changed(self) -> list[DiffEntry]:
        return self.of("changed")

    def lines(self) -> list[str]:
        """Return one human-readable line per difference (``no changes`` when there are none)."""
        return [str(entry) for entry in self.entries] or ["no changes"]

    def summary(self) -> str:
        """Return counts such as ``2 added, 1 removed, 0 changed``."""
        return f"{len(self.added)} added, {len(self.removed)} removed, {len(self.changed)} changed"


def workflow_diff(*, workflow: Workflow | None, config: fmt.ContextVariablesFile) -> ConfigDiff:
    """Compare a workflow's current definitions (None: no workflow yet) with a config."""
    incoming = fmt.config_export_dict(config)
    current = _canonical(workflow_document(workflow=workflow)) if workflow else {}
    return documents_diff(before=current, after=incoming)


def documents_diff(*, before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> ConfigDiff:
    """Compare two canonical documents: the one diff of imports, versions and conflicts."""
    current, incoming = before or {}, after
    entries: list[DiffEntry] = []
    old_db = (current.get("context_variables") or {}).get("database_name")
    new_db = (incoming.get("context_variables") or {}).get("database_name")
    if old_db != new_db:
        change = "added" if old_db is None else "removed" if new_db is None else "changed"
        entries.append(DiffEntry(change, "database_name", (_change(old_db, new_db),)))
    entries += _variables_diff(_variables_by_name(current), _variables_by_name(incoming))
    entries += _handoffs_diff(current.get("handoffs", []), incoming.get("handoffs", []))
    entries += [
        DiffEntry(change, subject, details)
        for change, subject, details in outputs_diff(
            current.get("outputs", []), incoming.get("outputs", [])
        )
    ]
    return ConfigDiff(tuple(entries))


def _canonical(document: dict[str, Any]) -> dict[str, Any]:
    # Compare like with like: stored rows in the export's shape (they may predate a rule).
    try:
        return fmt.config_export_dict(fmt.ContextVariablesFile.model_validate(document))
    except ValidationError:
        return document


def _variables_by_name(document: Mapping[str, Any]) -> dict[str, tuple[str, int, dict[str, Any]]]:
    section = document.get("context_variables") or {}
    out: dict[str, tuple[str, int, dict[str, Any]]] = {}
    for category in fmt.CATEGORIES:
        for index, item in enumerate(section.get(fmt.CATEGORY_KEYS[category], [])):
            out.setdefault(item["name"], (category, index, item))
    return out


def _variables_diff(
    old: dict[str, tuple[str, int, dict[str, Any]]],
    new: dict[str, tuple[str, int, dict[str, Any]]],
) -> list[DiffEntry]:
    entries: list[DiffEntry] = []
    for name, (category, _, item) in new.items():
        if name not in old:
            entries.append(DiffEntry("added", f"{category} variable {name}", _summary(item)))
    for name, (category, _, _item) in old.items():
        if name not in new:
            entries.append(DiffEntry("removed", f"{category} variable {name}"))
    for name, (category, _, item) in new.items():
        if name not in old:
            continue
        old_category, _, old_item = old[name]
        details: list[str] = []
        if old_category != category:
            details.append(f"category {old_category} → {category}")
        details += _field_changes(old_item, item)
        if details:
            entries.append(DiffEntry("changed", f"{category} variable {name}", tuple(details)))
    for category in fmt.CATEGORIES:
        # Only the relative order of the variables kept in this category counts as a change.
        kept = {n for n, (c, _, _) in new.items() if c == category and old.get(n, ("",))[0] == c}
        before = sorted(kept, key=lambda n: old[n][1])
        after = sorted(kept, key=lambda n: new[n][1])
        if before != after:
            detail = f"{', '.join(before)} → {', '.join(after)}"
            entries.append(DiffEntry("changed", f"order of the {category} variables", (detail,)))
    return entries


def _handoff_keys(handoffs: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    seen: dict[tuple[str, str], int] = defaultdict(int)
    out = {}
    for handoff in handoffs:
        pair = (handoff["source_agent"], handoff["target_agent"])
        out[(*pair, seen[pair])] = handoff
        seen[pair] += 1
    return out


def _handoffs_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[DiffEntry]:
    old_keyed, new_keyed = _handoff_keys(old), _handoff_keys(new)
    entries: list[DiffEntry] = []
    for key, handoff in new_keyed.items():
        label = f"hand-off {key[0]} → {key[1]}"
        if key not in old_keyed:
            entries.append(DiffEntry("added", label, (f"when {handoff['condition']}",)))
        elif old_keyed[key] != handoff:
            entries.append(
                DiffEntry("changed", label, tuple(_field_changes(old_keyed[key], handoff)))
            )
    for key, handoff in old_keyed.items():
        if key not in new_keyed:
            label = f"hand-off {key[0]} → {key[1]}"
            entries.append(DiffEntry("removed", label, (f"when {handoff['condition']}",)))
    return entries


def _summary(item: Mapping[str, Any]) -> tuple[str, ...]:
    parts = [str(item.get("type", ""))]
    if "value" in item:
        parts.append(f"value {_show(item['value'])}")
    source = item.get("source") or {}
    if "env_var" in source:
        parts.append(f"from ${source['env_var']}")
    if "collection" in source:
        parts.append(f"from {source['collection']}.{source.get('field', '?')}")
    if item.get("triggers"):
        count = len(item["triggers"])
        parts.append(f"{count} trigger{'s' if count != 1 else ''}")
    return (", ".join(p for p in parts if p),)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        out = {}
        for index, item in enumerate(value):
            out.update(_flatten(item, f"{prefix}[{index}]"))
        return out
    return {prefix: value}


def _field_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    flat_old, flat_new = _flatten(old), _flatten(new)
    changes = []
    for path in sorted(set(flat_old) | set(flat_new), key=_path_order(flat_old, flat_new)):
        before, after = flat_old.get(path, _MISSING), flat_new.get(path, _MISSING)
        # 1 == True == 1.0 in Python, but not in the file.
        if before != after or type(before) is not type(after):
            changes.append(f"{path} {_change(before, after)}")
    return changes


def _path_order(*documents: Mapping[str, Any]) -> Any:
    order: dict[str, int] = {}
    for document in documents:
        for path in document:
            order.setdefault(path, len(order))
    return lambda path: order[path]


_MISSING = object()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(none)"
    return json.dumps(value, ensure_ascii=False)


def _change(old: Any, new: Any) -> str:
    before = _MISSING if old is None else old
    after = _MISSING if new is None else new
    return f"{_show(before)} → {_show(after)}"


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
    if text.isdigit() and 0 < int(text) < 2**31:
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
            f"environment must be one of {', '.join(ENVIRONMENTS)}, got {environment!r}"
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
                    "(a draft awaits review; ask for ?version=draft to see it)"
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


PRODUCTION_WARNING = "never fires in production: environment variables are suppressed"


def production_warnings(*, document: Mapping[str, Any]) -> list[str]:
    """Say which hand-offs name an environment variable: in production they never fire."""
    section = document.get("context_variables") or {}
    environment = {v.get("name") for v in section.get("environment_variables") or []}
    warnings = []
    for handoff in document.get("handoffs") or []:
        try:
            names = fmt.condition_names(handoff.get("condition", ""))
        except fmt.ConditionError:
            continue
        gated = [name for name in names if name in environment]
        if gated:
            warnings.append(
                f"hand-off {handoff.get('source_agent')} → {handoff.get('target_agent')} when "
                f"{handoff.get('condition')}: {PRODUCTION_WARNING} ({', '.join(gated)})"
            )
    return warnings
