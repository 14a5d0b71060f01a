"""Compare a chat's own context with the run's state: what the adapters report (docs/ag2.md).

Both AG2 adapters (``contextadmin_sdk.integrations.autogen`` for AG2 Classic,
``contextadmin_sdk.integrations.ag2`` for
AG2 1.x) let tools and reply functions write the chat's own context. No change the chat makes to
a declared variable (or the base) is dropped silently: after every turn an adapter asks
``ContextSync.changes`` what to report, and gets

- a ``context_set`` for each declared variable the chat changed that the run may take (a derived
  flag set explicitly to a boolean is one: the engine records it as a flip whose cause names the
  tool or agent), and
- a ``warning`` for each change the run may not take (a declarative constant, the base, an
  environment variable in production, a value of another type or a credential-looking one),
  naming the variable, the refused value, who tried and the rule broken; once per name and
  value, so a tool that sets the same refused value again is not warned about again.

A declared variable (or base name) the chat deleted while the run holds a value (AG2 1.x
``delete_context``, a Classic reply function's ``context_variables.remove``) is a change the run
may not take either: a ``warning`` with ``value`` null, the rule ``deleted``, and a ``text``
saying the run keeps its value (``deleted_text``), once per name.

A refused value does not stay in the chat: ``ContextSync.restore`` says what to put back (the
run's value, also for a deleted name, or a name to delete where the run has none), and the
adapter writes it into the chat's own context before AG2 routes on it: what the chat routes on,
the inspector shows. Names the workflow does not declare (and that are not the base) are the
chat's own scratch data: neither reported nor put back.

The rule itself is the engine's (``context_set_refusal``); this module only diffs. Django-free.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from contextadmin_sdk.client.transport import encode_record, event_too_large
from contextadmin_sdk.engine import BASE_FLAGS, RunState, context_set_refusal, redact_credentials
from contextadmin_sdk.engine.format import RESERVED_NAMES, ContextVariablesFile, json_value_problem

__all__ = ["UNSTORABLE_PREVIEW_CHARS", "WARNING_VALUE_MAX_CHARS", "ContextSync", "deleted_text"]

UNSTORABLE_PREVIEW_CHARS = 200  # a warning about a non-JSON value keeps this much of its repr
WARNING_VALUE_MAX_CHARS = 2_000  # a larger refused value is shown by the start of its JSON
_DELETED = "\x00deleted"  # the fingerprint of a deletion (no JSON value's fingerprint)


def deleted_text(name: str) -> str:
    """The ``text`` of the warning about a deleted declared variable: what happened, and that
    the run keeps (and puts back) its value, so the run page says it in words."""
    return (
        f"name: {name} was deleted from the chat's context; the run keeps its value and puts it "
        "back (a declared variable is never deleted during a run)"
    )


class ContextSync:
    """Diff a chat's own context against the run's state: what to report."""

    def __init__(self, config: ContextVariablesFile, *, production: bool) -> None:
        if not isinstance(config, ContextVariablesFile):
            raise TypeError(
                "config: must be a ContextVariablesFile "
                f"(contextadmin_sdk.engine.load_config(...).config), "
                f"not {type(config).__name__}"
            )
        self.config = config
        self.production = production
        # Base names first, then the declared variables in canonical order: a stable order.
        names = [*sorted(RESERVED_NAMES), *BASE_FLAGS]
        names += [name for name in config.categories() if name not in names]
        self.names: tuple[str, ...] = tuple(names)
        self._warned: set[tuple[str, str]] = set()

    def changes(
        self,
        data: Mapping[str, Any],
        state: RunState,
        *,
        agent: str | None = None,
        tool: str | None = None,
    ) -> list[dict[str, Any]]:
        """Run events to emit, in a deterministic order: a context_set for each declared
        variable whose value in `data` differs from the state and that the run may take
        (derived flags: booleans), a warning for each it may not (once per name and value),
        and for each the run holds that `data` lacks (deleted by the chat: once per name)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"data: must be a mapping, not {type(data).__name__}")
        environment = "production" if self.production else state.environment
        known = state.context
        who: dict[str, Any] = {}
        if agent is not None:
            who["agent"] = agent
        if tool is not None:
            who["tool"] = tool
        events: list[dict[str, Any]] = []
        for name in self.names:
            if name not in data:
                if name in known and (name, _DELETED) not in self._warned:
                    self._warned.add((name, _DELETED))
                    events.append(self._deleted(name, who))
                continue
            value = data[name]
            if name in known and _same(known[name], value):
                continue
            unstorable = json_value_problem(value)
            if unstorable is not None:
                rule, problem = "type", f"value: {unstorable}"
            else:
                refusal = context_set_refusal(self.config, name, value, environment=environment)
                event = {"type": "context_set", "name": name, "value": value, **who}
                too_large = None if refusal else event_too_large(
                    encode_record(event), event_type="context_set"
                )
                if refusal is None and too_large is None:
                    events.append({**event, "value": copy.deepcopy(value)})
                    continue
                rule, problem = (refusal.rule, refusal.problem) if refusal else (
                    "type", f"value: {too_large}"  # the server could never take it
                )
            key = (name, _fingerprint(value))
            if key in self._warned:
                continue
            self._warned.add(key)
            events.append({
                "type": "warning",
                "name": name,
                "value": _reportable(value, unstorable=unstorable is not None),
                **who,
                "rule": rule,
                "text": problem,
            })
        return events

    @staticmethod
    def _deleted(name: str, who: Mapping[str, Any]) -> dict[str, Any]:
        """The warning about a declared variable the chat deleted: nothing was set, so its
        ``value`` is null; its rule, ``deleted``, tells it from a set to null."""
        return {
            "type": "warning",
            "name": name,
            "value": None,
            **who,
            "rule": "deleted",
            "text": deleted_text(name),
        }

    def restore(
        self, data: Mapping[str, Any], state: RunState
    ) -> tuple[dict[str, Any], list[str]]:
        """What to write back into the chat so it holds the run's values, after ``changes``
        was applied: ``(sets, deletes)``, the run's value of each declared variable (or base
        name) where ``data`` differs from it or lacks it (deleted by the chat), and the names
        ``data`` holds that the run lacks. Whatever is left different then is a change the run
        refused."""
        if not isinstance(data, Mapping):
            raise TypeError(f"data: must be a mapping, not {type(data).__name__}")
        known = state.context
        sets: dict[str, Any] = {}
        deletes: list[str] = []
        for name in self.names:
            if name not in data:
                if name in known:  # deleted by the chat: the run keeps its value
                    sets[name] = copy.deepcopy(known[name])
                continue
            if name not in known:
                deletes.append(name)
            elif not _same(known[name], data[name]):
                sets[name] = copy.deepcopy(known[name])
        return sets, deletes


def _same(known: Any, value: Any) -> bool:
    """Equal and of the same type (``True`` is not ``1``, ``1.0`` is not ``1``)."""
    if type(known) is not type(value):
        return False
    try:
        return bool(known == value)
    except Exception:  # a chat's own object with a hostile __eq__
        return False


def _fingerprint(value: Any) -> str:
    """A stable key for "this value was already warned about" (types kept: true is not 1)."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return f"{type(value).__qualname__}:{_safe_repr(value)}"


def _reportable(value: Any, *, unstorable: bool) -> Any:
    """What a warning may carry of a refused value: never a secret, always plain JSON (a
    value that is not is shown by the start of its repr)."""
    if unstorable:
        shown: Any = _safe_repr(value)[:UNSTORABLE_PREVIEW_CHARS]
    else:
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        shown = value if len(encoded) <= WARNING_VALUE_MAX_CHARS else (
            encoded[:WARNING_VALUE_MAX_CHARS] + "…"
        )
    redacted, _ = redact_credentials(shown)
    return copy.deepcopy(redacted)


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__qualname__}>"
