"""Seed 004's output mappings at run time: a tool's response written to ``agent``/``world``.

A workflow's ``outputs`` (``[{"tool", "field", "to"}]``, checked by ``format``) say: when
``tool`` responds, ``data[field]`` is written to the path ``to`` of the run's state. Here each
``tool_response`` becomes one ``OutputWrite`` per mapping of its tool: written (with the old
and the new value), or not, and why (the field is absent from the response, the value is over
the state budget ``OUTPUT_VALUE_MAX_BYTES``, the path is blocked by a value the runtime put
there). The write itself is ``RunState``'s; this module only decides what to write, so the
same event always gives the same writes (replay rebuilds the namespaces exactly).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .format import OUTPUT_VALUE_MAX_BYTES, ContextVariablesFile, OutputMapping

__all__ = ["OutputWrite", "output_value", "outputs_apply", "outputs_by_tool"]


@dataclass(frozen=True)
class OutputWrite:
    """What one mapping did with one tool response (stored in the event's result)."""

    tool: str
    field: str
    to: str
    written: bool
    old: Any = None
    new: Any = None
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "field": self.field, "to": self.to,
                               "written": self.written}
        if self.written:
            out["old"] = copy.deepcopy(self.old)
            out["new"] = copy.deepcopy(self.new)
        else:
            out["reason"] = self.reason
        return out


def outputs_by_tool(config: ContextVariablesFile) -> dict[str, tuple[OutputMapping, ...]]:
    """Group a workflow's mappings by tool, in their declared order (looked up per event)."""
    grouped: dict[str, list[OutputMapping]] = {}
    for output in config.outputs:
        grouped.setdefault(output.tool, []).append(output)
    return {tool: tuple(outputs) for tool, outputs in grouped.items()}


def output_value(mapping: OutputMapping, event: Mapping[str, Any]) -> tuple[bool, Any]:
    """Return (True, a copy of the value to write) or (False, why nothing is written)."""
    data = event.get("data")
    if not isinstance(data, Mapping) or mapping.field not in data:
        return False, f"data.{mapping.field}: absent from the response, {mapping.to} not written"
    value = data[mapping.field]
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    if size > OUTPUT_VALUE_MAX_BYTES:
        return False, (
            f"data.{mapping.field}: {size} bytes of JSON, over {OUTPUT_VALUE_MAX_BYTES} "
            f"(OUTPUT_VALUE_MAX_BYTES): {mapping.to} not written (the full response is in the log)"
        )
    return True, copy.deepcopy(value)


def outputs_apply(
    mappings: Iterable[OutputMapping],
    event: Mapping[str, Any],
    *,
    seq: int,
    get: Callable[[str], Any],
    put: Callable[[str, Any], None],
    writes: dict[str, dict[str, Any]],
) -> list[OutputWrite]:
    """Write each mapped field of a tool's response through ``put`` (``RunState.set``) and
    note in ``writes`` which tool wrote each path, at which seq; return what each mapping did."""
    done: list[OutputWrite] = []
    for mapping in mappings:
        names = {"tool": mapping.tool, "field": mapping.field, "to": mapping.to}
        found, value = output_value(mapping, event)
        if not found:
            done.append(OutputWrite(**names, written=False, reason=value))
            continue
        old = get(mapping.to)
        try:
            put(mapping.to, value)
        except KeyError as exc:  # the runtime put a value where the path needs an object
            done.append(OutputWrite(**names, written=False, reason=f"to: {exc.args[0]}"))
            continue
        writes[mapping.to] = {"tool": mapping.tool, "field": mapping.field, "seq": seq}
        done.append(OutputWrite(**names, written=True, old=old, new=copy.deepcopy(value)))
    return done
