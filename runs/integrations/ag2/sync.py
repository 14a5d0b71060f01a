"""The context-sync rule for the 1.x adapter: ``runs.integrations.context_sync.ContextSync``
(shared with the Classic adapter), with a stand-in until that module is on this branch."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from runs.engine import RunState, context_set_problem
from runs.engine.format import ContextVariablesFile

__all__ = ["ContextSync"]

try:
    from runs.integrations.context_sync import ContextSync
except ImportError:  # pragma: no cover - replaced by the shared module once merged

    class ContextSync:  # type: ignore[no-redef]
        """``changes(data, state)``: a ``context_set`` for each declared variable the
        workflow changed that a run may change (DESIGN.md §4)."""

        def __init__(self, config: ContextVariablesFile, *, production: bool) -> None:
            self.config = config
            self.production = production

        def changes(
            self,
            data: Mapping[str, Any],
            state: RunState,
            *,
            agent: str | None = None,
            tool: str | None = None,
        ) -> list[dict[str, Any]]:
            known = state.context
            events: list[dict[str, Any]] = []
            for name, value in data.items():
                if name in known and known[name] == value and type(known[name]) is type(value):
                    continue
                problem = context_set_problem(
                    self.config, name, value, environment=state.environment
                )
                if problem is None:
                    events.append(
                        {"type": "context_set", "name": name, "value": copy.deepcopy(value)}
                    )
            return events
