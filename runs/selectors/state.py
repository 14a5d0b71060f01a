"""A run's state at any seq (replay from the nearest snapshot) and the log's wire messages,
byte for byte the ones the live broadcast sent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from contextadmin_sdk.engine import RunState, event_sender, handoffs_readiness
from contextadmin_sdk.engine.format import ContextVariablesFile
from contextadmin_sdk.engine.state import NAMESPACES

from contextadmin.errors import BadRequest, NotFound
from runs.models import Run, RunEvent, RunSnapshot
from runs.selectors.run import run_get, run_summary
from runs.selectors.runs_list import run_last_event_at
from runs.services.caches import run_config


def json_text(data: Any) -> str:
    """Serialize once for the wire (orjson: fast, and it refuses NaN)."""
    return orjson.dumps(data).decode()


CATCH_UP_CHUNK = 500

def handoffs_now(config: ContextVariablesFile, context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each hand-off rule with whether it holds in this context (the engine decides)."""
    return handoffs_readiness(config, context) if config.handoffs else []


@dataclass
class StateAt:
    seq: int
    state: dict[str, Any]

    def as_response(self, run: Run) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "workflow_version": run.workflow_version,  # the version the run pinned
            "definitions": {  # what it pinned: a version of this server, or the runtime's own
                "source": run.definitions_source,
                "digest": f"sha256:{run.definitions_hash}",
            },
            "runtime": run.runtime,  # what reported the run: {"framework", "version", "sdk"}
            # agent and world: {} in a state stored before seed 004's namespaces
            "state": {k: self.state.get(k, {}) for k in NAMESPACES},
            "provenance": run.provenance,
            "flips": self.state.get("flips", []),
            "writes": self.state.get("writes", {}),  # agent/world path -> tool, field, seq
            "handoffs": handoffs_now(run_config(run), self.state["context"]),
        }


def run_state_at(*, run: Run, seq: int | None = None) -> StateAt:
    """Return the state after ``seq`` events (latest when None), replayed from the log."""
    seq = run.last_seq if seq is None else seq
    if seq == stored_state_seq(run.state):
        return StateAt(seq=seq, state=run.state)
    return StateAt(seq=seq, state=run_state_rebuilt(run=run, seq=seq).to_dict())


def run_snapshot(*, run_id: str, after: int | None) -> dict[str, Any]:
    """The inspector's first message: the state as of ``after`` (latest when None), the
    hand-off readiness then, and the run's summary."""
    run = run_get(run_id=run_id)
    state = run_state_at(run=run, seq=after).as_response(run)
    # the run's last event as stored: the page's "Last event" for every event up to the
    # summary's event_count, however late the page replays them
    run.last_event_at = run_last_event_at(run=run)  # type: ignore[attr-defined]
    return {"type": "snapshot", **state, "run": run_summary(run=run)}


def stored_state_seq(state: Mapping[str, Any]) -> int:
    """The seq a stored state (``run.state``, a snapshot) is as of.

    Ingest rewrites ``run.state`` only now and then (``runs.services.ingest``), so it may be
    behind ``run.last_seq``; the state says itself how far it is."""
    return int((state.get("execution") or {}).get("last_seq") or 0)


def run_state_rebuilt(*, run: Run, seq: int) -> RunState:
    """The run's state after ``seq`` events: the nearest stored state at or before it (the
    run's own ``state`` or a snapshot, every SNAPSHOT_EVERY events), then the log after it."""
    if seq > run.last_seq:
        raise BadRequest(f"at: the run has {run.last_seq} events, got at={seq}")
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
        for payload in payloads.values_list("payload", flat=True).iterator(chunk_size=500):
            state.apply(payload)
    return state


def event_message(
    *,
    seq: int,
    event: Mapping[str, Any],
    result: Mapping[str, Any],
    handoffs: list[dict[str, Any]],
) -> str:
    """The inspector's wire message for one stored event (live and catch-up alike)."""
    message = {
        "type": "event",
        "seq": seq,
        "event": event,
        "agent": event_sender(event),
        "flips": result.get("flips", []),
        "changes": result.get("changes", {}),
        "handoffs": handoffs,
    }
    if "outputs" in result:  # a mapped tool's response: what each output mapping wrote
        message["outputs"] = result["outputs"]
    return json_text(message)


def run_event_messages(
    *, run_id: str, after: int, limit: int = CATCH_UP_CHUNK
) -> list[tuple[int, str]]:
    """Return the wire messages of the events after ``after``, in order (for catch-up).

    Each message carries the hand-off readiness after its event, so the log is replayed from
    the state at ``after``: the same messages the live broadcast sent.
    """
    events = list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])
    if not events:
        return []
    run = run_get(run_id=run_id)
    config = run_config(run)
    state = run_state_rebuilt(run=run, seq=after)
    messages = []
    for event in events:
        state.apply(event.payload)
        handoffs = handoffs_now(config, state.context)
        text = event_message(seq=event.seq, event=event.payload, result=event.result,
                             handoffs=handoffs)
        messages.append((event.seq, text))
    return messages
