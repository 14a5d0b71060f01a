"""A run's state at any seq: the nearest stored state (the run's own, or a snapshot), then the
log after it. Ingest rebuilds a run's live state with it, the API and the pages read states
with it; it writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextadmin_sdk.engine import RunState, replaying
from contextadmin_sdk.engine.state import NAMESPACES

from contextadmin.errors import BadRequest, NotFound
from runs.messages import handoffs_now
from runs.models import Run, RunEvent, RunSnapshot
from runs.state.caches import run_config, run_digest_production


@dataclass
class StateAt:
    seq: int
    state: dict[str, Any]

    def as_response(self, run: Run) -> dict[str, Any]:
        """The state API's answer (and the inspector snapshot's core)."""
        return {
            "seq": self.seq,
            "workflow_version": run.workflow_version,  # the version the run pinned
            "definitions": {  # what it pinned: a version of this server, or the runtime's own
                "source": run.definitions_source,
                "digest": f"sha256:{run.definitions_hash}",
                "digest_production": run_digest_production(run),  # what a resume may hold
            },
            "runtime": run.runtime,  # what reported the run: {"framework", "version", "sdk"}
            # agent and world: {} in a state stored before seed 004's namespaces
            "state": {k: self.state.get(k, {}) for k in NAMESPACES},
            "provenance": run.provenance,
            "flips": self.state.get("flips", []),
            "writes": self.state.get("writes", {}),  # agent/world path -> tool, field, seq
            "handoffs": handoffs_now(run_config(run), self.state["context"]),
            "resumes": run_resumes(run=run, execution=self.state.get("execution") or {}),
        }


def run_resumes(*, run: Run, execution: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Where the run resumed (``execution.resumes``: after a pause, or where a new runtime
    took over a crashed one's run), each with when the server received that ``run_status``:
    the run page marks them on the path taken. One query on the log's (run, seq) index."""
    resumes = execution.get("resumes") or []
    if not resumes:
        return []
    seqs = [resume["seq"] for resume in resumes]
    received = dict(
        RunEvent.objects.filter(run=run, seq__in=seqs).values_list("seq", "received_at")
    )
    return [
        {**resume, "received_at": at.isoformat() if (at := received.get(resume["seq"])) else None}
        for resume in resumes
    ]


def run_flags(flips: list[dict[str, Any]]) -> list[str]:
    """The flags a run's flips left on (the runs list's "flags" column)."""
    return sorted({f["name"] for f in flips if f.get("value") is True})


def stored_state_seq(state: Mapping[str, Any]) -> int:
    """The seq a stored state (``run.state``, a snapshot) is as of.

    Ingest rewrites ``run.state`` only now and then (``runs.services.ingest``), so it may be
    behind ``run.last_seq``; the state says itself how far it is."""
    return int((state.get("execution") or {}).get("last_seq") or 0)


def run_state_at(*, run: Run, seq: int | None = None, name: str = "at") -> StateAt:
    """Return the state after ``seq`` events (latest when None), replayed from the log;
    ``name`` is the parameter that gave ``seq`` (its error names it)."""
    seq = run.last_seq if seq is None else seq
    if seq == stored_state_seq(run.state):
        return StateAt(seq=seq, state=run.state)
    return StateAt(seq=seq, state=run_state_rebuilt(run=run, seq=seq, name=name).to_dict())


def run_state_rebuilt(*, run: Run, seq: int, name: str = "at") -> RunState:
    """The run's state after ``seq`` events: the nearest stored state at or before it (the
    run's own ``state`` or a snapshot, every SNAPSHOT_EVERY events), then the log after it."""
    if seq > run.last_seq:
        raise BadRequest(f"{name}: the run has {run.last_seq} events, got {name}={seq}")
    config = run_config(run)
    base, base_seq = run.state, stored_state_seq(run.state)
    if base_seq > seq:
        base, base_seq = None, -1
    if base_seq < seq:
        snapshot = (
            RunSnapshot.objects.filter(run=run, seq__lte=seq, seq__gt=base_seq)
            .order_by("-seq")
            .first()
        )
        if snapshot is not None:
            base, base_seq = snapshot.state, snapshot.seq
    if base is None:  # runs always have one at seq 0; be robust anyway
        raise NotFound(f"run {run.pk} has no snapshot to replay from")
    state = RunState.from_dict(config, base)
    if base_seq < seq:
        payloads = RunEvent.objects.filter(run=run, seq__gt=base_seq, seq__lte=seq).order_by("seq")
        with replaying():  # the log's flips were logged when ingested: not again on each read
            for payload in payloads.values_list("payload", flat=True).iterator(chunk_size=500):
                state.apply(payload)
    return state
