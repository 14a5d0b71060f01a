"""Figures measured inside one Django process on its own temp database (B5, B8)."""

from __future__ import annotations

import gc
import os
import random
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import configs
from bench.live import event
from bench.stats import Timings
from devservers.migrated import database_migrate

perf = time.perf_counter


def django_setup(database_url: str) -> str:
    """Configure Django for this process on ``database_url``, migrate; return the DB label."""
    os.environ.update(
        DJANGO_SETTINGS_MODULE="contextadmin.settings",
        DATABASE_URL=database_url,
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_LOG_LEVEL="WARNING",
    )
    for name in ("REDIS_URL", "MONGODB_URI"):
        os.environ.pop(name, None)
    if database_url.startswith("sqlite:///"):  # a copy of the migrated template: no migration
        database_migrate(dict(os.environ))  # to run below (devservers/migrated.py)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    gc.freeze()  # as a server process does once loaded (contextadmin/asgi.py)
    return database_label(connection)


def database_label(connection: Any) -> str:
    if connection.vendor == "sqlite":
        return f"SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL)"
    version = ".".join(str(part) for part in connection.get_database_version())
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        synchronous_commit = cursor.fetchone()[0]
        cursor.execute("SHOW fsync")
        fsync = cursor.fetchone()[0]
    return (
        f"{connection.display_name} {version} (synchronous_commit={synchronous_commit}, "
        f"fsync={fsync})"
    )


# -- B5: export of a workflow with 1,000 variables --------------------------------------------
@dataclass
class Export:
    queries: dict[int, int]  # variables -> SQL queries of one export
    naive_queries: dict[int, int]
    timings: Timings
    naive: Timings
    size: int
    bytes: int


def _naive_export(workflow: Any) -> bytes:
    """The baseline: the same export reading each variable's triggers with its own query."""
    from contextadmin_sdk.engine import format as fmt

    from contextadmin import specs
    from contextadmin.models import Handoff, Variable

    variables = Variable.objects.filter(workflow=workflow).order_by("position", "id")
    document = specs.document_data(
        database_name=workflow.database_name,
        variables=((v, list(v.triggers.order_by("position", "id"))) for v in variables),
        handoffs=Handoff.objects.filter(workflow=workflow).order_by("position", "id"),
    )
    return fmt.config_export_bytes(fmt.parse_config(document).config)


def b5_export(*, sizes: tuple[int, ...], reps: int, naive_reps: int) -> Export:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from contextadmin.models import Workflow
    from contextadmin.selectors import workflow_export
    from contextadmin.services import workflow_import

    for size in sizes:
        workflow_import(name=f"Bench{size}", data=configs.workflow_document(size))
    queries: dict[int, int] = {}
    naive_queries: dict[int, int] = {}
    for size in sizes:
        workflow = Workflow.objects.get(name=f"Bench{size}")
        with CaptureQueriesContext(connection) as captured:
            workflow_export(workflow=workflow)
        queries[size] = len(captured)
        with CaptureQueriesContext(connection) as captured:
            _naive_export(workflow)
        naive_queries[size] = len(captured)
    size = max(sizes)
    samples, naive = [], []
    body = b""
    for rep in range(reps):
        workflow = Workflow.objects.get(name=f"Bench{size}")  # as a view would: fetch, export
        began = perf()
        body = workflow_export(
            workflow=workflow, environment=("development", "production")[rep % 2]
        )
        samples.append(perf() - began)
    for _ in range(naive_reps):
        workflow = Workflow.objects.get(name=f"Bench{size}")
        began = perf()
        _naive_export(workflow)
        naive.append(perf() - began)
    body = workflow_export(workflow=Workflow.objects.get(name=f"Bench{size}"))
    return Export(
        queries, naive_queries, Timings(tuple(samples)), Timings(tuple(naive)), size, len(body)
    )


# -- B8: state at seq N of a long run ----------------------------------------------------------
@dataclass
class StateAt:
    events: int
    ingest_seconds: float
    timings: Timings
    full_replay: Timings
    checked_seq: int  # replayed from seq 0 and from its snapshot: equal


def b8_state_at(
    *, events: int, batch: int, samples: int, full_replay_reps: int, seed: int = 6
) -> StateAt:
    from contextadmin_sdk.engine import RunState

    from contextadmin.models import Workflow
    from contextadmin.services import workflow_import
    from runs.models import Run, RunEvent
    from runs.services import ingest, lifecycle
    from runs.state import caches, run_state_at

    if not Workflow.objects.filter(name="Generator").exists():
        demo = Path(__file__).resolve().parents[1] / "contextadmin" / "demo"
        workflow_import(name="Generator", data=(demo / "context_variables.json").read_bytes())
    run_id = lifecycle.run_start(workflow_name="Generator", enterprise_id="bench").run.pk
    began = perf()
    for first in range(1, events + 1, batch):
        ingest.event_ingest(
            run_id=run_id,
            events=[event(seq) for seq in range(first, min(first + batch, events + 1))],
        )
    ingest_seconds = perf() - began
    run = Run.objects.get(pk=run_id)
    assert run.last_seq == events, (run.last_seq, events)
    snapshot_every = ingest.SNAPSHOT_EVERY
    rng = random.Random(seed)
    # The worst case replays SNAPSHOT_EVERY - 1 events after the nearest snapshot.
    worst = [(k * snapshot_every) - 1 for k in range(1, events // snapshot_every + 1)]
    targets = [rng.choice(worst) for _ in range(samples // 2)]
    targets += [rng.randint(1, events - 1) for _ in range(samples - len(targets))]
    timings = []
    for seq in targets:
        run = Run.objects.get(pk=run_id)  # as the API view does, per request
        start = perf()
        run_state_at(run=run, seq=seq)
        timings.append(perf() - start)
    # The baseline: replay from seq 0 with no snapshot (what snapshots save); its result must
    # equal the state replayed from the nearest snapshot.
    config = caches.run_config(run)
    seq = worst[-1]
    expected = run_state_at(run=run, seq=seq).state
    replay = []
    for _ in range(full_replay_reps):
        start = perf()
        state = RunState.from_dict(config, run_state_at(run=run, seq=0).state)
        payloads = RunEvent.objects.filter(run=run, seq__lte=seq).order_by("seq")
        for payload in payloads.values_list("payload", flat=True).iterator(chunk_size=2000):
            state.apply(payload)
        result = state.to_dict()
        replay.append(perf() - start)
        if result != expected:
            raise AssertionError(f"state at {seq}: replay from a snapshot differs from seq 0")
    return StateAt(events, ingest_seconds, Timings(tuple(timings)), Timings(tuple(replay)), seq)
