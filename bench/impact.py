"""B12: impact analysis (``contextadmin.impact``), recorded runs replayed per second.

In one Django process on the bench's temp database: a workflow's runs are recorded through the
real services (``run_start``, ``event_ingest``) under version 1, a draft (version 2) changes
its derived trigger, and ``impact_replay`` reads the runs from the registered source
(``runs.selectors.recorded_runs``, as History and ``impact_context`` do) and replays each
under its pinned version and under the draft. The baseline, in the same run and from the same
source, replays each run once under its pinned version only (what rebuilding a run's state
costs): impact does that twice per run, plus the comparison.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.live import event
from bench.stats import Rates

perf = time.perf_counter
WORKFLOW = "ImpactBench"
DEMO = Path(__file__).resolve().parents[1] / "contextadmin" / "demo" / "context_variables.json"


@dataclass
class Impact:
    runs: int
    events: int  # per run
    rates: Rates  # runs/s of impact_replay under the draft
    events_per_s: float  # median, both replays of each run counted once
    baseline: Rates  # runs/s of one replay under the pinned version
    changed: int  # runs the draft changes (each rep the same)
    unchanged_under_pinned: bool  # impact of the pinned version against itself: no difference
    ingest_seconds: float


def _draft(document: dict[str, Any]) -> dict[str, Any]:
    """The demo with its flag flipping on InterviewAgent's 2nd message instead of "NEXT"."""
    draft = copy.deepcopy(document)
    derived = draft["context_variables"]["derived_variables"][0]
    derived["triggers"] = [{"type": "agent_turn_count", "agent": "InterviewAgent", "count": 2}]
    return draft


def _replay_once(*, source: Any, limit: int) -> int:
    """The baseline: each recorded run's log replayed once under its pinned version."""
    from contextadmin_sdk.engine import RunState

    replayed = 0
    for recorded, pinned in source(workflow_name=WORKFLOW, limit=limit):
        derived = {v.name for v in pinned.context_variables.derived_variables}
        base = {k: v for k, v in recorded.base_context.items() if k not in derived}
        state = RunState(pinned, base, environment=recorded.environment)
        for payload in recorded.events:
            state.apply({key: value for key, value in payload.items() if key != "seq"})
        replayed += 1
    return replayed


def b12_impact(*, runs: int, events: int, reps: int) -> Impact:
    import orjson
    from contextadmin_sdk.engine import format as fmt

    from contextadmin import impact
    from contextadmin.selectors import workflow_export_version
    from contextadmin.services import workflow_import
    from runs.services import ingest, lifecycle

    document = orjson.loads(DEMO.read_bytes())
    from contextadmin.models import Workflow

    workflow_import(name=WORKFLOW, data=document, replace=True)
    workflow = Workflow.objects.get(name=WORKFLOW)
    began = perf()
    for index in range(runs):
        run_id = lifecycle.run_start(workflow_name=WORKFLOW, enterprise_id=f"e{index}").run.pk
        for first in range(1, events + 1, 1000):
            batch = [event(seq) for seq in range(first, min(first + 1000, events + 1))]
            ingest.event_ingest(run_id=run_id, events=batch)
    ingest_seconds = perf() - began
    pinned = fmt.parse_config(workflow_export_version(workflow=workflow).body).config
    workflow_import(name=WORKFLOW, data=_draft(document), replace=True)
    draft = fmt.parse_config(
        workflow_export_version(workflow=workflow, version="draft").body
    ).config
    source = impact.run_source()
    if source is None:
        raise RuntimeError("no run source registered (runs.apps.RunsConfig.ready)")

    check = impact.impact_replay(
        runs=source(workflow_name=WORKFLOW, limit=runs), candidate=pinned, limit=runs
    )
    samples, event_rates, baseline, changed = [], [], [], set()
    for _ in range(reps):  # interleaved: impact, then the baseline, each rep
        report = impact.impact_replay(
            runs=source(workflow_name=WORKFLOW, limit=runs),
            candidate=draft,
            limit=runs,
            time_budget_s=3600.0,
        )
        if report.replayed != runs:
            raise AssertionError(f"impact replayed {report.replayed} of {runs} runs")
        samples.append(report.runs_per_second)
        event_rates.append(report.events / report.seconds)
        changed.add(len(report.changed))
        start = perf()
        replayed = _replay_once(source=source, limit=runs)
        baseline.append(replayed / (perf() - start))
    if len(changed) != 1:
        raise AssertionError(f"impact differs between repetitions: {sorted(changed)}")
    return Impact(
        runs=runs,
        events=events,
        rates=Rates(tuple(samples)),
        events_per_s=statistics.median(event_rates),
        baseline=Rates(tuple(baseline)),
        changed=changed.pop(),
        unchanged_under_pinned=check.replayed == runs and not check.changed,
        ingest_seconds=ingest_seconds,
    )
