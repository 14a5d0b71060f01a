"""Load a run exported as JSONL (the run page's download, ``GET /api/runs/<id>/events/?format=
jsonl``) as a run of this server, so a production run can be inspected on a laptop.

The header line pins the run exactly as it was (definitions, the state at seq 0, provenance);
the events then go through ``ingest`` like any runtime's, in batches, so flips, snapshots and the
final state are derived again by the engine here: the replayed state equals the original's. They
go as a replay: no webhook fires (the original's were sent when it ran).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from contextadmin_sdk.engine import RunState, replaying
from contextadmin_sdk.engine.format import (
    ENVIRONMENTS,
    ConfigError,
    config_export_bytes,
    enterprise_id_problem,
    parse_config,
)
from django.conf import settings
from django.db import transaction

from contextadmin.errors import ApiError, BadRequest, Conflict
from contextadmin.models import Workflow
from contextadmin.selectors import workflow_version_matching
from runs.json_input import datetime_decode
from runs.models import Run, RunEvent, RunSnapshot
from runs.services import ingest
from runs.services.lifecycle import RUN_ID_PATTERN
from runs.services.run_pinning import definitions_foreign_refuse, runtime_check


@dataclass
class ImportedRun:
    run: Run
    events: int


def _line_decode(line: str | bytes, number: int) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"line {number}: not valid JSON ({exc})") from None


def _header_read(header: Any) -> dict[str, Any]:
    run = header.get("run") if isinstance(header, dict) else None
    if not isinstance(run, dict) or "type" in header:
        raise BadRequest(
            "line 1: expected the run's header ({\"run\": {...}}) as the run page's JSONL "
            "download writes it; a file of events only is replayed with simulate_run"
        )
    for field in ("workflow", "enterprise_id", "definitions", "initial_state"):
        if not run.get(field):
            raise BadRequest(f"line 1: run.{field}: required")
    problem = enterprise_id_problem(run["enterprise_id"])  # as a run start would refuse it
    if problem is not None:
        raise BadRequest(f"line 1: run.enterprise_id: {problem}")
    if run.get("environment") not in ENVIRONMENTS:
        raise BadRequest(f"line 1: run.environment: one of {', '.join(ENVIRONMENTS)}")
    for field in ("started_at", "ended_at", "last_event_at"):  # optional; read before a row
        if run.get(field) is not None:
            if not isinstance(run[field], str):
                raise BadRequest(f"line 1: run.{field}: expected a date and time (a string)")
            run[field] = datetime_decode(run[field], what=f"line 1: run.{field}")
    return run


def _run_create(header: dict[str, Any], *, run_id: str) -> Run:
    """Create the run as its header pins it: definitions, state at seq 0, provenance."""
    try:
        config = parse_config(header["definitions"]).config
    except ConfigError as exc:
        raise BadRequest(f"line 1: run.definitions: {exc.issues[0]}") from None
    try:
        state = RunState.from_dict(
            config, header["initial_state"], environment=header["environment"]
        ).to_dict()
    except (KeyError, TypeError, ValueError) as exc:
        raise BadRequest(f"line 1: run.initial_state: not a run state ({exc})") from None
    try:
        runtime = runtime_check(header.get("runtime") or None)  # {}: none was recorded
    except BadRequest as exc:
        raise BadRequest(f"line 1: run.{exc.message}") from None
    definitions_bytes = config_export_bytes(config)
    with transaction.atomic():
        if Run.objects.filter(pk=run_id).exists():
            raise Conflict(
                f"run_id: a run {run_id!r} already exists here: import it under another id "
                "with --run-id NEW_ID"
            )
        workflow = Workflow.objects.filter(name=header["workflow"]).first()
        definitions_hash = hashlib.sha256(definitions_bytes).hexdigest()
        # the version here with the same definitions (the original's number when it matches)
        version = workflow_version_matching(
            workflow=workflow,
            digest=definitions_hash,
            number=_positive_int(header.get("workflow_version")),
        )
        if workflow is not None and version is None:  # another workflow's, under a wrong name?
            try:
                definitions_foreign_refuse(
                    workflow=workflow, digest=f"sha256:{definitions_hash}", token=None
                )
            except BadRequest as exc:
                raise BadRequest(f"line 1: run.{exc.message}") from None
        run = Run.objects.create(
            id=run_id,
            workflow=workflow,
            workflow_name=header["workflow"],
            definitions=orjson.loads(definitions_bytes),
            definitions_hash=definitions_hash,
            workflow_version=version,
            # a version of this server's, or definitions it has not published (as a start says)
            definitions_source=(
                Run.DefinitionsSource.VERSION if version else Run.DefinitionsSource.RUNTIME
            ),
            enterprise_id=header["enterprise_id"],
            environment=header["environment"],
            provenance=header.get("provenance") or {},
            warnings=header.get("warnings") or [],
            runtime=runtime,
            state=state,
        )
        RunSnapshot.objects.create(run=run, seq=0, state=state)
        started_at = header.get("started_at")
        if started_at is not None:  # keep the original start: durations and the list's order
            Run.objects.filter(pk=run.pk).update(started_at=started_at)
    return run


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _batches(lines: Iterator[str | bytes], size: int) -> Iterator[tuple[int, list[dict]]]:
    """Yield (first line number, events) batches from the lines after the header."""
    batch: list[dict] = []
    first = 2
    for number, line in enumerate(lines, 2):
        if not line.strip():
            continue
        event = _line_decode(line, number)
        if not isinstance(event, dict) or "type" not in event:
            raise BadRequest(f"line {number}: each line after the header is an event with a type")
        if not batch:
            first = number
        batch.append(event)
        if len(batch) >= size:
            yield first, batch
            batch = []
    if batch:
        yield first, batch


def run_import(*, lines: Iterable[str | bytes], run_id: str | None = None) -> ImportedRun:
    """Create a run from an exported JSONL file's lines (read one batch at a time).

    A file that fails part-way leaves no run behind: the partial run is deleted, and the error
    names the line.
    """
    iterator = iter(lines)
    first_line = next(iterator, None)
    if first_line is None:
        raise BadRequest("line 1: the file is empty")
    header = _header_read(_line_decode(first_line, 1))
    run_id = run_id or header.get("id") or ""
    if not RUN_ID_PATTERN.match(run_id):
        raise BadRequest("run_id: 1-64 characters of A-Z, a-z, 0-9, _ and -")
    run = _run_create(header, run_id=run_id)
    count = 0
    try:
        for first, events in _batches(iterator, settings.API_MAX_EVENTS_PER_BATCH):
            try:
                with replaying():  # past events: their flips were logged when they happened
                    ingest.event_ingest(run_id=run.pk, events=events, replay=True)
            except ApiError as exc:
                raise type(exc)(f"lines from {first}: {exc.message}", **exc.extra) from None
            count += len(events)
    except BaseException:
        Run.objects.filter(pk=run.pk).delete()
        raise
    ended_at = header.get("ended_at")
    if ended_at is not None:
        Run.objects.filter(pk=run.pk, ended_at__isnull=False).update(ended_at=ended_at)
    # the original's last event time, not the import's (older exports: its end, if it ended)
    last_event_at = header.get("last_event_at") or ended_at
    if last_event_at is not None:
        last_seq = Run.objects.filter(pk=run.pk).values_list("last_seq", flat=True).first()
        RunEvent.objects.filter(run_id=run.pk, seq=last_seq).update(received_at=last_event_at)
    run.refresh_from_db()
    return ImportedRun(run=run, events=count)
