"""Ingest: append a batch of events to a run's log, derive its flips, commit; then the hook.

One transaction per batch: the whole batch is stored or none of it. The run's row is locked
for the batch, so one run's batches apply one after another, in seq order.

``events_ingest_many`` commits the batches of many runs in one transaction (a group commit:
the ingest sockets of a process hand theirs in together, ``runs.batching``), each batch still
all or nothing: one refused batch does not hold up the others.

The run's ``state`` column is not rewritten after every batch (issue 14, item 15: a state may
hold up to about 1 MB): only when the batch flipped a flag, changed the run's status, reached
a snapshot seq, or STATE_WRITE_EVERY events after the last write. Between writes the state is
the stored one plus the log after it (``runs.state.run_state_rebuilt``), which this process
keeps live in its cache (``runs.state.live_state_take``); each event's wire message is built
as it is applied (``runs.messages``).

Each batch that stored events sends ``runs.signals.events_stored`` inside the transaction and
``events_committed`` after it (the broadcast and the webhooks receive them).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

import orjson
from contextadmin_sdk.engine import (
    RUN_ENDED_STATUSES,
    EventError,
    RunEnded,
    RunState,
    validate_event,
)
from contextadmin_sdk.engine.format import ContextVariablesFile, run_id_valid
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from contextadmin.errors import ApiError, BadRequest, Conflict
from runs.messages import event_message, handoffs_now
from runs.models import ApiToken, Flip, Run, RunEvent, RunSnapshot
from runs.selectors.run import run_not_found
from runs.signals import events_committed_send, events_stored
from runs.state import (
    LiveState,
    live_state_keep,
    live_state_take,
    run_config,
    run_flags,
    run_state_rebuilt,
    stored_state_seq,
)
from runs.tokens import token_sees_workflow

logger = logging.getLogger(__name__)

SNAPSHOT_EVERY = 500  # replay to any seq applies at most this many events
STATE_WRITE_EVERY = SNAPSHOT_EVERY  # run.state is at most this many events behind the log
# The big JSON columns are read only when needed: the state comes from this process's cache
# when it is current, the definitions from the config cache (by hash).
INGEST_DEFERRED = ("definitions", "provenance", "warnings", "state")
AGENT_MAX_CHARS = 200  # RunEvent.agent


@dataclass
class IngestResult:
    last_seq: int
    flips: list[dict[str, Any]] = field(default_factory=list)
    acks: list[dict[str, Any]] = field(default_factory=list)  # per event: seq, flips


@dataclass(frozen=True)
class IngestRequest:
    """One run's batch, as ``event_ingest`` takes it."""

    run_id: str
    events: Any
    token: ApiToken | None = None
    replay: bool = False  # a past run's events, loaded by import_run: nobody is notified


@dataclass
class _Batch:
    """What a batch stores, and the broadcast messages of its new events."""

    events: list[RunEvent] = field(default_factory=list)
    flips: list[Flip] = field(default_factory=list)
    snapshots: list[RunSnapshot] = field(default_factory=list)
    messages: list[tuple[int, str]] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)  # the run's columns to update
    flags: list[str] = field(default_factory=list)  # the flags on after it (runs list)
    replay: bool = False  # IngestRequest.replay


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


def event_ingest(
    *, run_id: str, events: Any, token: ApiToken | None = None, replay: bool = False
) -> IngestResult:
    """Append events to a run's log, derive flips, commit, then broadcast.

    A seq already stored with the same payload is acknowledged again (retries are safe), also
    after the run ended; with another payload, a gap, or any new event for an ended run
    (``RunState``'s lifecycle rule), the batch is refused with 409.
    """
    request = IngestRequest(run_id=run_id, events=events, token=token, replay=replay)
    outcome = _group_commit([request])[0]
    if isinstance(outcome, ApiError):
        raise outcome
    return outcome


Outcome = IngestResult | ApiError | DatabaseError


def events_ingest_many(*, requests: Sequence[IngestRequest]) -> list[Outcome]:
    """Ingest many runs' batches together: one transaction for all, one answer per request,
    in order: an ``IngestResult``, the ``ApiError`` that refused that batch alone, or the
    ``DatabaseError`` that failed its write alone.

    A run named twice has its later batches committed after the first, in order. If the
    shared write fails (a database error), each batch is retried in its own transaction, so
    one batch cannot fail the others.
    """
    outcomes: list[Outcome | None] = [None] * len(requests)
    remaining = list(enumerate(requests))
    while remaining:
        seen: set[str] = set()
        group, later = [], []
        for item in remaining:
            (later if item[1].run_id in seen else group).append(item)
            seen.add(item[1].run_id)
        answers: list[Outcome]
        try:
            answers = list(_group_commit([request for _, request in group]))
        except DatabaseError as exc:
            answers = [exc] if len(group) == 1 else [_commit_alone(r) for _, r in group]
        for (index, _), answer in zip(group, answers, strict=True):
            outcomes[index] = answer
        remaining = later
    return [outcome for outcome in outcomes if outcome is not None]


def _commit_alone(request: IngestRequest) -> Outcome:
    try:
        return _group_commit([request])[0]
    except DatabaseError as exc:
        logger.exception("ingest of a batch for run %s failed", request.run_id[:80])
        return exc


def _group_commit(requests: Sequence[IngestRequest]) -> list[IngestResult | ApiError]:
    """Apply each request's batch (each run at most once), store all in one transaction."""
    outcomes: list[IngestResult | ApiError] = []
    applied: list[tuple[Run, _Batch]] = []
    with transaction.atomic():
        ids = sorted({r.run_id for r in requests if run_id_valid(r.run_id)})  # nothing else
        runs = {  # locked in one order, so two processes' groups cannot deadlock
            run.pk: run
            for run in Run.objects.select_for_update().defer(*INGEST_DEFERRED)
            .filter(pk__in=ids).order_by("pk")
        } if ids else {}
        for request in requests:
            try:
                events = _events_shape_check(request.events)
                run = runs.get(request.run_id)
                if run is None or not token_sees_workflow(
                    token=request.token, workflow_name=run.workflow_name
                ):
                    raise run_not_found(request.run_id)  # foreign reads as unknown
                result, batch = _batch_apply(run, events)
            except ApiError as exc:
                outcomes.append(exc)
                continue
            outcomes.append(result)
            if batch.events:
                batch.replay = request.replay
                applied.append((run, batch))
        _batches_store(applied)
    return outcomes


def _batches_store(applied: list[tuple[Run, _Batch]]) -> None:
    """Write the applied batches of a group: one INSERT per table and, for the runs, one
    UPDATE per kind of change; then queue each run's broadcast for after the commit."""
    if not applied:
        return
    RunEvent.objects.bulk_create([e for _, batch in applied for e in batch.events])
    Flip.objects.bulk_create([f for _, batch in applied for f in batch.flips])
    snapshots = [s for _, batch in applied for s in batch.snapshots]
    if snapshots:
        RunSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True)
    # Most batches only add to the counters: one UPDATE per (events, flips) added, for all
    # such runs (their rows are locked); a run whose status or stored state changes is saved.
    added: dict[tuple[int, int], list[str]] = {}
    for run, batch in applied:
        if batch.fields == ["last_seq", "flip_count"]:
            added.setdefault((len(batch.events), len(batch.flips)), []).append(run.pk)
        else:
            run.save(update_fields=batch.fields)
    for (events, flips), ids in added.items():
        Run.objects.filter(pk__in=ids).update(
            last_seq=F("last_seq") + events, flip_count=F("flip_count") + flips
        )
    for run, batch in applied:  # the hook after commit (runs.signals): broadcast, webhooks
        stored = {"run": run, "events": batch.events, "flips": batch.flips, "replay": batch.replay}
        events_stored.send(sender=Run, **stored)
        transaction.on_commit(
            partial(
                events_committed_send, sender=Run, messages=batch.messages, flags=batch.flags,
                **stored,
            )
        )


def _live_state(run: Run) -> LiveState:
    """The run's state as of its last seq: this process's live copy, else rebuilt."""
    live = live_state_take(run)
    if live is not None:
        return live
    stored = run.state  # deferred: read now
    return LiveState(
        state=run_state_rebuilt(run=run, seq=run.last_seq),
        stored_seq=stored_state_seq(stored),
        size=len(orjson.dumps(stored)),
    )


def _batch_apply(run: Run, events: list[dict[str, Any]]) -> tuple[IngestResult, _Batch]:
    """Apply the batch to the run's state; build what it stores and what it answers."""
    live = _live_state(run)
    state = live.state
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
        _run_fields_update(run, live, batch)
    result.last_seq = run.last_seq
    transaction.on_commit(lambda: live_state_keep(run, live))
    return result, batch


def _run_fields_update(run: Run, live: LiveState, batch: _Batch) -> None:
    """Set the run's columns after a batch; the state only when a reader needs it stored."""
    state = live.state
    batch.flags = run_flags(state.flips)
    run.last_seq = batch.events[-1].seq
    run.flip_count += len(batch.flips)
    batch.fields = ["last_seq", "flip_count"]
    status = state.execution["status"]
    if run.status != status:
        run.status = status
        batch.fields.append("status")
        if status in RUN_ENDED_STATUSES:
            run.ended_at = timezone.now()
            batch.fields.append("ended_at")
    if (
        batch.flips
        or "status" in batch.fields
        or batch.snapshots
        or run.last_seq - live.stored_seq >= STATE_WRITE_EVERY
    ):
        run.state = batch.snapshots[-1].state if (
            batch.snapshots and batch.snapshots[-1].seq == run.last_seq
        ) else state.to_dict()
        live.stored_seq, live.size = run.last_seq, len(orjson.dumps(run.state))
        batch.fields.append("state")
    else:  # what the cache counts grows by about what the batch added (its event messages,
        # already serialized for the broadcast); measured again at the next write
        live.size += sum(len(text) for _, text in batch.messages)


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
    if applied.outputs:  # seed 004: what each output mapping of this tool wrote, or why not
        outcome["outputs"] = [write.as_dict() for write in applied.outputs]
    if applied.resumed is not None:  # where a runtime took the run over: the run page marks it
        outcome["resumed"] = applied.resumed
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
    handoffs = handoffs_now(config, state.context)
    batch.messages.append(
        (seq, event_message(seq=seq, event=event, result=outcome, handoffs=handoffs))
    )
    result.flips.extend(flips)
    result.acks.append({"seq": seq, "flips": flips})
    if seq % SNAPSHOT_EVERY == 0:
        batch.snapshots.append(RunSnapshot(run=run, seq=seq, state=state.to_dict()))
