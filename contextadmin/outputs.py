"""Seed 004's output mappings as definition rows: to and from the document, and their diff.

The rules are the format's (``contextadmin_sdk.engine.format``: ``outputs``); this module only
moves rows
and plain data, as ``specs`` does for variables and hand-offs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contextadmin_sdk.engine import format as fmt

from contextadmin.models import OutputMapping, Workflow

# What an invalid mapping is replaced by while the rest of a document is checked
# (``specs.config_parse_all``): a target of its own, so it never collides with another.
STAND_IN_TOOL = "PlaceholderTool"


def output_spec(output: OutputMapping) -> dict[str, Any]:
    """Return the data of one output mapping row (the format's key order)."""
    return {"tool": output.tool, "field": output.field, "to": output.to}


def output_rows(*, workflow: Workflow, config: fmt.ContextVariablesFile) -> list[OutputMapping]:
    """Return unsaved rows for a parsed config's output mappings, in their order."""
    return [
        OutputMapping(
            workflow=workflow, position=position, tool=o.tool, field=o.field, to=o.to
        )
        for position, o in enumerate(config.outputs)
    ]


def output_stand_in(index: int) -> dict[str, Any]:
    """A harmless mapping in place of an invalid one at ``index``."""
    return {"tool": STAND_IN_TOOL, "field": "placeholder", "to": f"agent.placeholder_{index}"}


def output_label(item: Any) -> str:
    """``extract_keywords.keywords → agent.intermediate.keywords``: a mapping named in errors
    ("" for an item that is not an object)."""
    if not isinstance(item, Mapping):
        return ""
    return f"{item.get('tool', '?')}.{item.get('field', '?')} → {item.get('to', '?')}"


def outputs_diff(
    old: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]
) -> list[tuple[str, str, tuple[str, ...]]]:
    """Compare two lists of mappings by target path: (change, subject, details) per difference.

    A target is written by one mapping (the format's rule), so the path identifies it; a
    reordering alone is a change of the order (the export's bytes change with it).
    """
    before = {item["to"]: item for item in old}
    after = {item["to"]: item for item in new}
    entries: list[tuple[str, str, tuple[str, ...]]] = []

    def source(item: Mapping[str, Any]) -> str:
        return f"set by tool {item['tool']} from data.{item['field']}"

    for to, item in after.items():
        if to not in before:
            entries.append(("added", f"output mapping {to}", (source(item),)))
        elif before[to] != item:
            entries.append(
                ("changed", f"output mapping {to}", (f"{source(before[to])} → {source(item)}",))
            )
    for to, item in before.items():
        if to not in after:
            entries.append(("removed", f"output mapping {to}", (source(item),)))
    kept_before = [to for to in before if to in after]
    kept_after = [to for to in after if to in before]
    if kept_before != kept_after:
        entries.append((
            "changed", "order of the output mappings",
            (f"{', '.join(kept_before)} → {', '.join(kept_after)}",),
        ))
    return entries
