"""A run's context as the loader builds it: values, where each came from, and warnings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .coercion import env_flag
from .format import UNRESOLVED_REASON_MAX_CHARS
from .log import context_diff, logger

STATUSES = ("resolved", "default", "unresolved", "suppressed")
PRODUCTION_REASON = "suppressed in production"
PRODUCTION_PURGE_REASON = f"{PRODUCTION_REASON} (defensive purge)"
SUPPLIED_REASON = "supplied by the runtime at start"
# A declared database or environment variable the supplied context lacks: the runtime could not
# read it, so it is unresolved, with the runtime's own reason when its start sends one
# (``unresolved``), else with this general one.
NOT_SUPPLIED_REASONS = {
    "database": "the runtime supplied no value at start: its look-up found none (no MongoDB "
    "configured, no matching document, or a failed look-up: the runtime's log says which)",
    "environment": "the runtime supplied no value at start (its environment variable unset or "
    "unparsable there, with no default)",
}


@dataclass
class Context:
    """A run's context: AG2 ContextVariables data, where each value came from, and warnings."""

    values: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def unresolved_reasons(self) -> dict[str, str]:
        """Why each database or environment variable left out of ``values`` is unread: what a
        runtime sends at start beside its values, so the run page shows the exact reason."""
        return {
            name: str(entry.get("reason") or "")[:UNRESOLVED_REASON_MAX_CHARS]
            for name, entry in self.provenance.items()
            if entry.get("status") == "unresolved"
            and entry.get("category") in NOT_SUPPLIED_REASONS
            and entry.get("reason")
            and name not in self.values
        }

    def to_dict(self) -> dict[str, Any]:
        """Return the context as JSON-safe data."""
        return {
            "values": dict(self.values),
            "provenance": {name: dict(entry) for name, entry in self.provenance.items()},
            "warnings": list(self.warnings),
        }


# -- a context supplied by the runtime --------------------------------------------------------
class ContextError(ValueError):
    """A supplied context the run cannot take; each of ``problems`` names ``context.<name>``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class ContextBuilder:
    """Accumulates values, provenance and warnings, logging diffs between steps when verbose."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.context = Context()
        self.verbose = env_flag(environ.get("CONTEXT_VERBOSE_DEBUG"))
        self.secret_names: set[str] = set()

    def put(
        self,
        name: str,
        value: Any,
        *,
        category: str,
        source: str,
        status: str,
        reason: str | None = None,
    ) -> None:
        self.context.values[name] = value
        self.note(name, category=category, source=source, status=status, reason=reason)

    def note(
        self, name: str, *, category: str, source: str, status: str, reason: str | None = None
    ) -> None:
        """Record provenance for a variable that has no value (or set it alongside one)."""
        if status != "resolved" and status != "default":
            self.context.values.pop(name, None)
        self.context.provenance[name] = {
            "category": category,
            "source": source,
            "status": status,
            "reason": reason,
        }

    def warn(self, message: str) -> None:
        self.context.warnings.append(message)
        logger.warning("context: %s", message)

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        before = dict(self.context.values) if self.verbose else {}
        yield
        if self.verbose:
            diff = context_diff(
                before, self.context.values, secret_names=frozenset(self.secret_names)
            )
            logger.debug("context diff after %s: %s", label, "; ".join(diff) or "(no change)")

