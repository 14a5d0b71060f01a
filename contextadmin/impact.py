"""Impact of a change before publishing it: replay recorded runs under another version.

Derived state is a pure fold over a run's event log (docs/engine.md), so replaying the same
events under the draft instead of the run's pinned version says exactly what the change would have
done: which flags would flip at a different event (or no longer, or newly), and which hand-offs
would hold at a different point. Pure: it reads recorded runs from a source and the engine.

The runs live in the ``runs`` app, which this app must not import; the ``runs`` app registers
a source with ``run_source_register`` (in its ``AppConfig.ready``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextadmin_sdk.engine import EventError, RunState, evaluate_condition, replaying
from contextadmin_sdk.engine import format as fmt

DEFAULT_RUNS = 100
DEFAULT_MAX_EVENTS = 200_000  # per replay: bounds memory and time whatever a run holds
DEFAULT_TIME_BUDGET_S = 60.0


@dataclass(frozen=True)
class RecordedRun:
    """One recorded run as the runs side hands it over: its start context and its events."""

    run_id: str
    base_context: Mapping[str, Any]
    events: Iterable[Mapping[str, Any]]
    environment: str = "development"
    version: int | None = None  # the version it pinned, for the report


# A source yields up to ``limit`` recent runs of a workflow, newest first; the config each run
# pinned comes with it so the replay compares like with like.
RunSource = Callable[..., Iterable[tuple[RecordedRun, fmt.ContextVariablesFile]]]
_SOURCES: list[RunSource] = []


def run_source_register(source: RunSource) -> None:
    """Let the app that records runs provide them (called once, from its AppConfig.ready)."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def run_source() -> RunSource | None:
    """Return the registered run source, or None when no app records runs."""
    return _SOURCES[-1] if _SOURCES else None


@dataclass(frozen=True)
class Difference:
    """One thing that would go differently: ``kind`` is flip, handoff or event."""

    kind: str
    subject: str  # the flag, the hand-off (``A → B``), or ``event 12``
    before: int | None  # the seq it happened at under the pinned version (None: never)
    after: int | None  # ... under the other version

    def __str__(self) -> str:
        verb = "flips" if self.kind == "flip" else "holds"
        if self.kind == "event":
            return f"{self.subject}: refused under the new version"
        if self.before is None:
            return f"{self.subject} newly {verb} at event {self.after}"
        if self.after is None:
            return f"{self.subject} no longer {verb} (was at event {self.before})"
        return f"{self.subject} {verb} at event {self.after} instead of {self.before}"


@dataclass
class RunImpact:
    run_id: str
    version: int | None
    events: int
    differences: list[Difference] = field(default_factory=list)
    truncated: bool = False  # stopped at max_events


@dataclass
class ImpactReport:
    runs: list[RunImpact] = field(default_factory=list)
    replayed: int = 0
    events: int = 0
    seconds: float = 0.0
    stopped_early: str = ""  # why fewer runs than asked were replayed

    @property
    def changed(self) -> list[RunImpact]:
        return [run for run in self.runs if run.differences]

    @property
    def runs_per_second(self) -> float:
        return self.replayed / self.seconds if self.seconds else 0.0


def _handoff_keys(config: fmt.ContextVariablesFile) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], int] = defaultdict(int)
    keys = []
    for handoff in config.handoffs:
        pair = (handoff.source_agent, handoff.target_agent)
        label = f"hand-off {pair[0]} → {pair[1]}"
        if seen[pair]:
            label += f" #{seen[pair] + 1}"
        seen[pair] += 1
        keys.append((label, handoff.condition))
    return keys


def _timeline(
    config: fmt.ContextVariablesFile,
    base: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    environment: str,
) -> tuple[dict[str, int], dict[str, int], dict[int, str]]:
    """Replay: first seq each flag flips, first seq each hand-off holds, events refused."""
    state = RunState(config, base, environment=environment)
    flips: dict[str, int] = {}
    holds: dict[str, int] = {}
    refused: dict[int, str] = {}
    handoffs = _handoff_keys(config)
    for label, condition in handoffs:
        if evaluate_condition(condition, state.context):
            holds[label] = 0
    for position, event in enumerate(events, start=1):
        event = {key: value for key, value in event.items() if key != "seq"}
        try:
            applied = state.apply(event)
        except EventError as exc:
            refused[position] = str(exc)
            continue
        for flip in applied.flips:
            flips.setdefault(flip.name, position)
        if applied.flips or event.get("type") == "context_set":
            for label, condition in handoffs:
                if label not in holds and evaluate_condition(condition, state.context):
                    holds[label] = position
    return flips, holds, refused


def run_impact(
    *,
    run: RecordedRun,
    pinned: fmt.ContextVariablesFile,
    candidate: fmt.ContextVariablesFile,
    max_events: int = DEFAULT_MAX_EVENTS,
) -> RunImpact:
    """Compare one run replayed under its pinned version and under the candidate."""
    events: list[Mapping[str, Any]] = []
    truncated = False
    for event in run.events:
        if len(events) >= max_events:
            truncated = True
            break
        events.append(event)
    # The start context minus the pinned derived flags: each replay seeds its own defaults.
    derived = {variable.name for variable in pinned.context_variables.derived_variables}
    base = {name: value for name, value in run.base_context.items() if name not in derived}
    with replaying():  # the run's flips were logged when it ran: not again per replay
        before = _timeline(pinned, base, events, run.environment)
        after = _timeline(candidate, base, events, run.environment)
    differences: list[Difference] = []
    for kind, old, new in (("flip", before[0], after[0]), ("handoff", before[1], after[1])):
        for subject in sorted(set(old) | set(new)):
            if old.get(subject) != new.get(subject):
                differences.append(Difference(kind, subject, old.get(subject), new.get(subject)))
    for position in sorted(set(after[2]) - set(before[2])):
        differences.append(Difference("event", f"event {position}", position, None))
    return RunImpact(run.run_id, run.version, len(events), differences, truncated)


def impact_replay(
    *,
    runs: Iterable[tuple[RecordedRun, fmt.ContextVariablesFile]],
    candidate: fmt.ContextVariablesFile,
    limit: int = DEFAULT_RUNS,
    time_budget_s: float = DEFAULT_TIME_BUDGET_S,
    max_events: int = DEFAULT_MAX_EVENTS,
    progress: Callable[[int, int], None] | None = None,
) -> ImpactReport:
    """Replay up to ``limit`` runs under ``candidate``; stop when the time budget is spent.

    Runs are consumed one at a time (a source may stream them), so memory is one run's events.
    """
    report = ImpactReport()
    started = time.monotonic()
    for run, pinned in runs:
        if report.replayed >= limit:
            break
        if time.monotonic() - started > time_budget_s:
            report.stopped_early = f"time budget of {time_budget_s:g} s spent"
            break
        impact = run_impact(run=run, pinned=pinned, candidate=candidate, max_events=max_events)
        report.runs.append(impact)
        report.replayed += 1
        report.events += impact.events
        if progress is not None:
            progress(report.replayed, limit)
    report.seconds = time.monotonic() - started
    return report
