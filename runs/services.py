"""Writes for runs: start a run, ingest events, manage API tokens; broadcasts after commit."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from contextadmin.models import Workflow
from contextadmin.selectors import workflow_config
from runs.db import api_tokens_with_prefix, run_events_insert, run_fields_save, run_locked_get
from runs.engine import DerivedContextManager, EventError, RunState, build_context, validate_event
from runs.engine.format import ConfigError, ContextVariablesFile, config_export_bytes, parse_config
from runs.errors import BadRequest, Conflict, Forbidden, NotFound, RateLimited
from runs.models import ApiToken, Flip, Run, RunEvent, RunSnapshot

logger = logging.getLogger(__name__)

SNAPSHOT_EVERY = 500  # replay to any seq applies at most this many events
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ENTERPRISE_ID_MAX = 200
CONTEXT_MAX_BYTES = 256 * 1024
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
RUNS_GROUP = "runs"


def run_group(run_id: str) -> str:
    """Name the channel-layer group of one run's inspectors."""
    return f"run.{run_id}"


def dumps(data: Any) -> str:
    """Serialize once for the wire (orjson: fast, and rejects NaN)."""
    return orjson.dumps(data).decode()


@lru_cache(maxsize=256)
def _config_for(definitions_hash: str, definitions_json: str) -> ContextVariablesFile:
    return parse_config(orjson.loads(definitions_json)).config


_configs_by_hash: dict[str, ContextVariablesFile] = {}


def run_config(run: Run) -> ContextVariablesFile:
    """Return the run's pinned definitions, parsed once per process.

    Looked up by the definitions' hash first, so a run loaded without its ``definitions``
    column (event_ingest defers it) does not read and decode them on every batch.
    """
    config = _configs_by_hash.get(run.definitions_hash)
    if config is None:
        config = _config_for(run.definitions_hash, dumps(run.definitions))
        if len(_configs_by_hash) >= 256:
            _configs_by_hash.clear()
        _configs_by_hash[run.definitions_hash] = config
    return config


# -- the live state of runs this process ingests into ---------------------------------------
_LIVE_STATES_MAX = 1024
_live_states: dict[str, tuple[Any, int, str, RunState]] = {}


def _live_state_take(run: Run) -> RunState:
    """Return the run's state as of ``run.last_seq``: the one this process kept after its last
    batch when it still matches (same run, same last seq), else rebuilt from ``run.state``.

    The caller owns the returned state (it is removed from the cache): a batch that fails
    half-way cannot leave a half-applied state behind. ``_live_state_keep`` puts it back after
    the commit.
    """
    kept = _live_states.pop(run.pk, None)
    if kept is not None and kept[:3] == (run.started_at, run.last_seq, run.definitions_hash):
        return kept[3]
    return RunState.from_dict(run_config(run), run.state)


def _live_state_keep(run: Run, state: RunState) -> None:
    if len(_live_states) >= _LIVE_STATES_MAX:
        _live_states.pop(next(iter(_live_states)), None)
    _live_states[run.pk] = (run.started_at, run.last_seq, run.definitions_hash, state)


# -- API tokens -----------------------------------------------------------------------------
TOKEN_PREFIX = "ca_"  # noqa: S105  (a marker, not a secret)


def _token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, name: str, workflow: Workflow | None = None) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret, which is never stored and shown once."""
    name = name.strip()
    if not name:
        raise BadRequest("name: required")
    if ApiToken.objects.filter(name=name).exists():
        raise Conflict(f"name: a token named {name!r} already exists")
    prefix = secrets.token_hex(4)
    secret = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        name=name, prefix=prefix, secret_hash=_token_hash(secret), workflow=workflow
    )
    return token, secret


def api_token_authenticate(*, secret: str) -> ApiToken | None:
    """Return the live token for a presented secret (constant-time compare), else None."""
    match = re.fullmatch(rf"{TOKEN_PREFIX}([0-9a-f]{{8}})_[A-Za-z0-9_-]{{20,100}}", secret or "")
    if match is None:
        return None
    presented = _token_hash(secret)
    for token in api_tokens_with_prefix(match.group(1)):
        if hmac.compare_digest(token.secret_hash, presented) and not token.revoked:
            if token.workflow_id is not None:  # loaded here: async callers check the scope
                token.workflow  # noqa: B018
            now = timezone.now()
            if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
                ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            return token
    return None


def api_token_revoke(*, token: ApiToken) -> None:
    """Revoke a token: it stops working at once."""
    ApiToken.objects.filter(pk=token.pk).update(revoked=True)


def token_check_workflow(*, token: ApiToken | None, workflow_name: str) -> None:
    """Refuse a token scoped to another workflow."""
    if token is not None and token.workflow_id is not None and token.workflow.name != workflow_name:
        raise Forbidden(f"this token is scoped to workflow {token.workflow.name!r}")


# -- starting a run -------------------------------------------------------------------------
_mongo_clients: dict[str, Any] = {}


def mongo_client_get() -> Any:
    """Return the process's MongoDB client (None when MONGODB_URI is unset)."""
    uri = settings.MONGODB_URI
    if not uri:
        return None
    if uri not in _mongo_clients:
        from runs.engine.mongo import mongo_client

        _mongo_clients[uri] = mongo_client(uri, timeout_ms=settings.MONGODB_TIMEOUT_MS)
    return _mongo_clients[uri]


def _check_supplied_context(context: Any) -> dict[str, Any]:
    if not isinstance(context, dict):
        raise BadRequest("context: must be an object of variable name -> value")
    try:
        size = len(orjson.dumps(context))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise BadRequest(f"context: not JSON-serializable: {exc}") from None
    if size > CONTEXT_MAX_BYTES:
        raise BadRequest(f"context: {size} bytes, at most {CONTEXT_MAX_BYTES}")
    for key in context:
        if not isinstance(key, str) or not key or len(key) > 64:
            raise BadRequest(f"context.{key}: names must be non-empty strings of at most 64 chars")
    return context


@dataclass
class StartedRun:
    run: Run
    created: bool


def run_start(
    *,
    workflow_name: str,
    enterprise_id: str,
    run_id: str | None = None,
    environment: str | None = None,
    context: dict[str, Any] | None = None,
    token: ApiToken | None = None,
) -> StartedRun:
    """Start a run: pin the workflow's definitions, build (or take) its context, store it."""
    if not isinstance(workflow_name, str) or not workflow_name:
        raise BadRequest("workflow: required (a workflow name)")
    if not isinstance(enterprise_id, str) or not enterprise_id.strip():
        raise BadRequest("enterprise_id: required (a non-empty string)")
    if len(enterprise_id) > ENTERPRISE_ID_MAX:
        raise BadRequest(f"enterprise_id: at most {ENTERPRISE_ID_MAX} characters")
    if run_id is not None and (not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id)):
        raise BadRequest("run_id: 1-64 characters of A-Z, a-z, 0-9, _ and -")
    environment = environment or settings.ENVIRONMENT or "development"
    if environment not in Run.Environment.values:
        raise BadRequest(f"environment: must be one of {', '.join(Run.Environment.values)}")
    if context is not None:
        context = _check_supplied_context(context)
    token_check_workflow(token=token, workflow_name=workflow_name)
    workflow = Workflow.objects.filter(name=workflow_name).first()
    if workflow is None:
        raise NotFound(f"workflow: no workflow named {workflow_name!r}")

    if run_id is not None:
        existing = Run.objects.filter(pk=run_id).first()
        if existing is not None:
            return _run_start_retry(
                existing, workflow_name=workflow_name, enterprise_id=enterprise_id
            )

    _token_runs_check(token)
    try:
        config = workflow_config(workflow=workflow)
    except ConfigError as exc:  # stored before a rule tightened: the admin shows what to fix
        raise Conflict(
            f"workflow: the definitions of {workflow_name} break the format; fix them in the admin",
            issues=[{"path": issue.path, "message": issue.message} for issue in exc.issues],
        ) from None
    definitions_bytes = config_export_bytes(config)
    definitions = orjson.loads(definitions_bytes)
    manager = DerivedContextManager(config)
    if context is None:
        environ = {**os.environ, "ENVIRONMENT": environment}
        built = build_context(
            config,
            workflow_name=workflow_name,
            enterprise_id=enterprise_id,
            environ=environ,
            mongo=mongo_client_get(),
        )
        values, provenance, warnings = (
            dict(built.values),
            dict(built.provenance),
            list(built.warnings),
        )
    else:
        categories = config.categories()
        values = {**manager.defaults(), **context}
        values.setdefault("enterprise_id", enterprise_id)
        values.setdefault("workflow_name", workflow_name)
        provenance = {
            name: {
                "category": categories.get(
                    name, "base" if name in ("enterprise_id", "workflow_name") else "supplied"
                ),
                "source": "runtime" if name in context else "derived",
                "status": "resolved" if name in context else "default",
                "reason": "supplied by the runtime at start" if name in context else None,
            }
            for name in values
        }
        warnings = []
    state = RunState(config, values)
    try:
        with transaction.atomic():
            _token_runs_check(token, lock=True)
            run = Run.objects.create(
                **({"id": run_id} if run_id else {}),
                workflow=workflow,
                workflow_name=workflow_name,
                definitions=definitions,
                definitions_hash=hashlib.sha256(definitions_bytes).hexdigest(),
                enterprise_id=enterprise_id,
                environment=environment,
                provenance=provenance,
                warnings=warnings,
                state=state.to_dict(),
                token=token,
            )
            RunSnapshot.objects.create(run=run, seq=0, state=run.state)
            transaction.on_commit(lambda: _broadcast_run(run))
    except IntegrityError:
        # A concurrent start with the same run_id won the race: answer as for a retry.
        existing = Run.objects.filter(pk=run_id).first() if run_id else None
        if existing is None:
            raise
        return _run_start_retry(existing, workflow_name=workflow_name, enterprise_id=enterprise_id)
    logger.info("run %s started for %s/%s (%s)", run.pk, workflow_name, enterprise_id, environment)
    return StartedRun(run=run, created=True)


def _token_runs_check(token: ApiToken | None, *, lock: bool = False) -> None:
    """Refuse a start while the token has API_MAX_RUNNING_RUNS_PER_TOKEN runs not yet ended."""
    limit = settings.API_MAX_RUNNING_RUNS_PER_TOKEN
    if token is None or not limit:
        return
    if lock:  # serialize this token's starts (PostgreSQL; SQLite write transactions already are)
        list(ApiToken.objects.select_for_update().filter(pk=token.pk).values_list("pk"))
    running = Run.objects.filter(token=token).exclude(status__in=TERMINAL_STATUSES).count()
    if running >= limit:
        raise RateLimited(
            f"token: {running} of its runs have not ended, at most {limit} "
            "(API_MAX_RUNNING_RUNS_PER_TOKEN); end one with a run_status event "
            "(completed, failed or cancelled) first"
        )


def _run_start_retry(existing: Run, *, workflow_name: str, enterprise_id: str) -> StartedRun:
    if existing.workflow_name != workflow_name or existing.enterprise_id != enterprise_id:
        raise Conflict(
            f"run_id: run {existing.pk} already exists for {existing.workflow_name}/"
            f"{existing.enterprise_id}",
        )
    return StartedRun(run=existing, created=False)


# -- ingest ---------------------------------------------------------------------------------
@dataclass
class IngestResult:
    last_seq: int
    flips: list[dict[str, Any]] = field(default_factory=list)
    acks: list[dict[str, Any]] = field(default_factory=list)  # per event: seq, flips


def _validated_events(events: Any) -> list[dict[str, Any]]:
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
        problems = validate_event(event)
        if problems:
            raise BadRequest(f"events[{index}].{problems[0]}", problems=problems, index=index)
    return events


_INGEST_DEFERRED = ("definitions", "provenance", "warnings", "state")


def event_ingest(*, run_id: str, events: Any, token: ApiToken | None = None) -> IngestResult:
    """Append events to a run's log, derive flips, commit, then broadcast.

    One transaction per batch: the whole batch is stored or none of it. A seq already stored
    with the same payload is acknowledged again (retries are safe); with another payload, or
    a gap, the batch is refused with 409.
    """
    events = _validated_events(events)
    with transaction.atomic():
        # The big JSON columns are read only when needed: the state comes from this process's
        # cache when it is current, the definitions from the config cache (by hash).
        run = run_locked_get(run_id=run_id, deferred=_INGEST_DEFERRED)
        if run is None:
            raise NotFound(f"run_id: no run {run_id!r}")
        token_check_workflow(token=token, workflow_name=run.workflow_name)
        result, stored, flips, snapshots = _apply_batch(run, events)
        if stored:
            run_events_insert(stored)
            if flips:
                Flip.objects.bulk_create(flips)
            if snapshots:
                RunSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True)
            status_changed = run.status != run.state["execution"]["status"]
            if status_changed:
                run.status = run.state["execution"]["status"]
                if run.status in TERMINAL_STATUSES:
                    run.ended_at = timezone.now()
            run.flip_count += len(flips)
            run_fields_save(run, fields=("state", "last_seq", "flip_count", "status", "ended_at"))
            messages = [(e.seq, _event_message(e)) for e in stored]
            transaction.on_commit(lambda: _broadcast_events(run, messages))
    return result


def _apply_batch(
    run: Run, events: list[dict[str, Any]]
) -> tuple[IngestResult, list[RunEvent], list[Flip], list[RunSnapshot]]:
    state = _live_state_take(run)
    expected = run.last_seq + 1
    retried = [e["seq"] for e in events if e.get("seq") is not None and e["seq"] < expected]
    previous = (
        {e.seq: e for e in RunEvent.objects.filter(run=run, seq__in=retried)} if retried else {}
    )
    result = IngestResult(last_seq=run.last_seq)
    stored: list[RunEvent] = []
    flips: list[Flip] = []
    snapshots: list[RunSnapshot] = []
    for index, event in enumerate(events):
        seq = event.get("seq")
        if seq is None:
            event = {**event, "seq": expected}
        elif seq < expected:
            old = previous.get(seq)
            if old is None:  # stored earlier in this same batch
                old_payload = next(e.payload for e in stored if e.seq == seq)
                old_result = next(e.result for e in stored if e.seq == seq)
            else:
                old_payload, old_result = old.payload, old.result
            if old_payload != event:
                raise Conflict(
                    f"events[{index}].seq: seq {seq} is already stored with a different payload",
                    expected_seq=expected,
                )
            result.acks.append(
                {"seq": seq, "flips": old_result.get("flips", []), "duplicate": True}
            )
            continue
        elif seq > expected:
            raise Conflict(
                f"events[{index}].seq: gap: got seq {seq}, expected {expected}",
                expected_seq=expected,
            )
        try:
            applied = state.apply(event)
        except EventError as exc:  # e.g. context_set of an undeclared variable
            raise BadRequest(
                f"events[{index}].{exc.problems[0]}", problems=exc.problems, index=index
            ) from None
        flip_dicts = [{**flip.as_dict(), "seq": applied.seq} for flip in applied.flips]
        outcome = {"flips": flip_dicts, "changes": applied.changes}
        stored.append(
            RunEvent(
                run=run,
                seq=applied.seq,
                type=event["type"],
                agent=str(event.get("agent") or event.get("tool") or "")[:200],
                payload=event,
                result=outcome,
            )
        )
        flips.extend(
            Flip(
                run=run,
                variable=f["name"],
                value=f["value"],
                seq=applied.seq,
                trigger_index=f.get("trigger_index"),
                cause=f.get("cause") or {},
            )
            for f in flip_dicts
        )
        result.flips.extend(flip_dicts)
        result.acks.append({"seq": applied.seq, "flips": flip_dicts})
        if applied.seq % SNAPSHOT_EVERY == 0:
            snapshots.append(RunSnapshot(run=run, seq=applied.seq, state=state.to_dict()))
        expected = applied.seq + 1
    if stored:
        run.state = state.to_dict()
        run.last_seq = stored[-1].seq
    result.last_seq = run.last_seq
    transaction.on_commit(lambda: _live_state_keep(run, state))
    return result, stored, flips, snapshots


# -- broadcasts (after commit; a failing channel layer never loses a committed event) -------
def _event_message(event: RunEvent) -> str:
    return dumps(
        {
            "type": "event",
            "seq": event.seq,
            "event": event.payload,
            "flips": event.result.get("flips", []),
            "changes": event.result.get("changes", {}),
        }
    )


BROADCAST_TIMEOUT_S = 1.0  # a broadcast never holds up an ingest answer longer than this
BROADCAST_PAUSE_S = 2.0  # after a failed one, skip broadcasts this long (docs/reliability.md)
_broadcast_paused_until = 0.0


async def _group_send_bounded(layer: Any, group: str, message: dict[str, Any]) -> None:
    # asyncio.timeout, not wait_for: on Python 3.11 wait_for runs the send as a new task, two
    # trips round the event loop per broadcast.
    async with asyncio.timeout(BROADCAST_TIMEOUT_S):
        await layer.group_send(group, message)


class _BroadcastFailed(Exception):
    def __init__(self, group: str) -> None:
        super().__init__(group)
        self.group = group


async def _group_sends_bounded(layer: Any, sends: list[tuple[str, dict[str, Any]]]) -> None:
    for group, message in sends:
        try:
            await _group_send_bounded(layer, group, message)
        except Exception as exc:
            raise _BroadcastFailed(group) from exc


def _group_send(group: str, message: dict[str, Any]) -> None:
    """Broadcast after commit, bounded in time: an unreachable layer (a Redis that drops
    packets would hold each send for its socket timeouts) costs one ingest at most
    BROADCAST_TIMEOUT_S, then broadcasts pause for BROADCAST_PAUSE_S. A skipped broadcast is a
    dropped message: inspectors refill from the log by seq."""
    _group_sends([(group, message)])


_collected_broadcasts: ContextVar[list[tuple[str, dict[str, Any]]] | None] = ContextVar(
    "collected_broadcasts", default=None
)


@contextlib.contextmanager
def broadcasts_collected() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Within it, broadcasts made after commit are collected instead of sent, for an async
    caller to send with ``broadcasts_send`` once its thread returns. The ingest paths use it:
    sending from the worker thread costs a hop into the event loop and back (0.5 ms of a
    one-event ingest here; docs/benchmarks.md)."""
    collected: list[tuple[str, dict[str, Any]]] = []
    token = _collected_broadcasts.set(collected)
    try:
        yield collected
    finally:
        _collected_broadcasts.reset(token)


async def broadcasts_send(sends: list[tuple[str, dict[str, Any]]]) -> None:
    """Send group messages in order (see ``_group_send``); never raises."""
    global _broadcast_paused_until
    layer = get_channel_layer()
    if not sends or layer is None or time.monotonic() < _broadcast_paused_until:
        return
    try:
        await _group_sends_bounded(layer, sends)
    except Exception as exc:  # the log is the truth: inspectors resync from it by seq
        _broadcast_paused_until = time.monotonic() + BROADCAST_PAUSE_S
        group = exc.group if isinstance(exc, _BroadcastFailed) else sends[0][0]
        logger.exception("broadcast to %s failed; inspectors will resync from the log", group)


def _group_sends(sends: list[tuple[str, dict[str, Any]]]) -> None:
    """``_group_send`` several messages, in order, with one hop into the event loop (from a
    sync thread under ASGI each hop is a thread switch), or none under ``broadcasts_collected``."""
    collected = _collected_broadcasts.get()
    if collected is not None:
        collected.extend(sends)
        return
    if get_channel_layer() is None or time.monotonic() < _broadcast_paused_until:
        return
    async_to_sync(broadcasts_send)(sends)


def _broadcast_events(run: Run, messages: list[tuple[int, str]]) -> None:
    _group_sends(
        [(run_group(run.pk), {"type": "run.events", "items": messages}), _run_message(run)]
    )


def _run_message(run: Run) -> tuple[str, dict[str, Any]]:
    from runs.selectors import run_summary

    text = dumps({"type": "run", "run": run_summary(run=run)})
    return RUNS_GROUP, {"type": "runs.run", "text": text}


def _broadcast_run(run: Run) -> None:
    _group_send(*_run_message(run))
