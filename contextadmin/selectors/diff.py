"""What changes between two documents: an incoming file against a workflow, or two versions."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextadmin_sdk.engine import format as fmt
from pydantic import ValidationError

from contextadmin.models import (
    Workflow,
)
from contextadmin.outputs import outputs_diff
from contextadmin.selectors.workflows import workflow_document


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
