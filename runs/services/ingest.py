"""Ingest: append a batch of events to a run's log, derive its flips, commit, broadcast.

One transaction per batch: the whole batch is stored or none of it. The run's row is locked
for the batch, so one run's batches apply one after another, in seq order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from runs import selectors
from runs.engine import EventError, RunEnded, RunState, validate_event
from runs.engine.format import ContextVariablesFile, run_id_valid
from runs.errors import BadRequest, Conflict
from runs.models import ApiToken, Flip, Run, RunEvent, RunSnapshot
from runs.services.broadcast import run_events_broadcast
from runs.services.caches import live_state_keep, live_state_take, run_config
from runs.services.lifecycle import TERMINAL_STATUSES
from runs.services.tokens import token_sees_workflow

SNAPSHOT_EVERY = 500  # replay to any seq applies at most this many events
# The big JSON columns are read only when needed: the state comes from this process's cache
# when it is current, the definitions from the config cache (by hash).
INGEST_DEFERRED = ("definitions", "provenance", "warnings", "state")
AGENT_MAX_CHARS = 200  # RunEvent.agent


@dataclass
class IngestResult:
    last_seq: int
    flips: list[dict[str, Any]] = field(default_factory=list)
    acks: list[dict[str, Any]] = field(default_factory=list)  # per event: seq, flips


@dataclass
class _Batch:
    """What a batch stores, and the broadcast messages of its new events."""

    events: list[RunEvent] = field(default_factory=list)
    flips: list[Flip] = field(default_factory=list)
    snapshots: list[RunSnapshot] = field(default_factory=list)
    messages: list[tuple[int, str]] = field(default_factory=list)


def _events_shape_check(events: Any) -> list[dict[str, Any]]:
    """Check the batch's shape; each event's fields are checked once, where it is applied."""
    if not isinstance(events, list):
        raise BadRequest("events: must be a list of event objects")
    if not events:
        raise BadRequest("events: must hold at least one event")
    limit = settings.API_MAX_EVENTS_PER_BATCH
    if len(events) > limit:
        raise BadRequest(
            f"events: {len(events)} events in one batch, at most {limit} (API_MAX_EVENTS_PER_BATCH)"
        )
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise BadRequest(f"events[{index}]: must be an object")
    return events


def _problems_raise(index: int, problems: list[str]) -> NoReturn:
    raise BadRequest(f"events[{index}].{problems[0]}", problems=problems, index=index)


def _ended_raise(run: Run, index: int, status: str) -> NoReturn:
    """A new event for an ended run (the engine's lifecycle rule): 409 naming its status."""
    raise Conflict(
        f"events[{index}]: run {run.pk} has ended ({status}): it takes no more events",
        run_status=status,
        index=index,
    )


def event_ingest(*, run_id: str, events: Any, token: ApiToken | None = None) -> IngestResult:
    """Append events to a run's log, derive flips, commit, then broadcast.

    A seq already stored with the same payload is acknowledged again (retries are safe), also
    after the run ended; with another payload, a gap, or any new event for an ended run
    (``RunState``'s lifecycle rule), the batch is refused with 409.
    """
    events = _events_shape_check(events)
    with transaction.atomic():
        run = (
            Run.objects.select_for_update()
            .defer(*INGEST_DEFERRED)
            .filter(pk=run_id)
            .first()
            if run_id_valid(run_id)  # the run-id rule: nothing else reaches SQL
            else None
        )
        if run is None or not token_sees_workflow(token=token, workflow_name=run.workflow_name):
            raise selectors.run_not_found(run_id)  # a foreign run reads as an unknown one
        result, batch = _batch_apply(run, events)
        if batch.events:
            RunEvent.objects.bulk_create(batch.events)
            Flip.objects.bulk_create(batch.flips)
            RunSnapshot.objects.bulk_create(batch.snapshots, ignore_conflicts=True)
            fields = ["state", "last_seq", "flip_count"]
            status = run.state["execution"]["status"]
            if run.status != status:
                run.status = status
                fields.append("status")
                if status in TERMINAL_STATUSES:
                    run.ended_at = timezone.now()
                    fields.append("ended_at")
            run.flip_count += len(batch.flips)
            run.save(update_fields=fields)
            run_events_broadcast(run, batch.messages)
    return result


def _batch_apply(run: Run, events: list[dict[str, Any]]) -> tuple[IngestResult, _Batch]:
    """Apply the batch to the run's state; build what it stores and what it answers."""
    state = live_state_take(run)
    config = run_config(run)
    expected = run.last_seq + 1
    retried = [e["seq"] for e in events if isinstance(e.get("seq"), int) and e["seq"] < expected]
    previous = (
        {e.seq: e for e in RunEvent.objects.filter(run=run, seq__in=retried)} if retried else {}
    )
    result = IngestResult(last_seq=run.last_seq)
    batch = _Batch()
    for index, event in enumerate(events):
        seq = event.get("seq")
        if seq is not None and seq != expected:
            # Not applied, so checked here: a retry is compared with what is stored, a gap
            # refused; either way a malformed event is a 400 first.
            problems = validate_event(event)
            if problems:
                _problems_raise(index, problems)
            if seq > expected and state.ended:
                _ended_raise(run, index, state.execution["status"])
            if seq > expected:
                raise Conflict(
                    f"events[{index}].seq: gap: got seq {seq}, expected {expected}",
                    expected_seq=expected,
                )
            result.acks.append(_retry_ack(index, event, expected, previous, batch.events))
            continue
        if seq is None:
            event = {**event, "seq": expected}
        _event_apply(run, state, config, event, index, result, batch)
        expected += 1
    if batch.events:
        run.state = state.to_dict()
        run.last_seq = batch.events[-1].seq
    # what the cache counts: the state's stored size (the engine's budget keeps it about 1 MB
    # at most); a batch of retries only, rare, measures the state it keeps unchanged
    size = len(orjson.dumps(run.state if batch.events else state.to_dict()))
    result.last_seq = run.last_seq
    transaction.on_commit(lambda: live_state_keep(run, state, size=size))
    return result, batch


def _retry_ack(
    index: int,
    event: dict[str, Any],
    expected: int,
    previous: dict[int, RunEvent],
    stored: list[RunEvent],
) -> dict[str, Any]:
    """Acknowledge a seq already stored (before or earlier in this batch) with this payload."""
    seq = event["seq"]
    old = previous.get(seq) or next(e for e in stored if e.seq == seq)
    if old.payload != event:
        raise Conflict(
            f"events[{index}].seq: seq {seq} is already stored with a different payload",
            expected_seq=expected,
        )
    return {"seq": seq, "flips": old.result.get("flips", []), "duplicate": True}


def _event_apply(
    run: Run,
    state: RunState,
    config: ContextVariablesFile,
    event: dict[str, Any],
    index: int,
    result: IngestResult,
    batch: _Batch,
) -> None:
    """Apply one new event (the engine validates it) and add what it stores and answers."""
    try:
        applied = state.apply(event)
    except RunEnded as exc:
        _ended_raise(run, index, exc.status)
    except EventError as exc:  # e.g. context_set of an undeclared variable
        _problems_raise(index, exc.problems)
    seq = applied.seq
    flips = [{**flip.as_dict(), "seq": seq} for flip in applied.flips]
    outcome = {"flips": flips, "changes": applied.changes}
    batch.events.append(
        RunEvent(
            run=run,
            seq=seq,
            type=event["type"],
            agent=str(event.get("agent") or event.get("tool") or "")[:AGENT_MAX_CHARS],
            payload=event,
            result=outcome,
        )
    )
    batch.flips.extend(
        Flip(
            run=run,
            variable=f["name"],
            value=f["value"],
            seq=seq,
            trigger_index=f.get("trigger_index"),
            cause=f.get("cause") or {},
        )
        for f in flips
    )
    handoffs = selectors.handoffs_now(config, state.context)
    batch.messages.append(
        (seq, selectors.event_message(seq=seq, event=event, result=outcome, handoffs=handoffs))
    )
    result.flips.extend(flips)
    result.acks.append({"seq": seq, "flips": flips})
    if seq % SNAPSHOT_EVERY == 0:
        batch.snapshots.append(RunSnapshot(run=run, seq=seq, state=state.to_dict()))
