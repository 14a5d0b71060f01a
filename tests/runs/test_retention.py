"""prune_runs: ended runs older than the cut-off go with their events, flips and snapshots, in
batches of constant query count; running runs are never touched."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs.models import Flip, Run, RunEvent, RunSnapshot
from runs.services import retention

pytestmark = pytest.mark.django_db


def runs_of(count: int, *, prefix: str, status: str, ended_days_ago: float | None,
            events: int = 0) -> list[str]:
    """Insert runs directly, each with ``events`` events, a flip and a snapshot at seq 0."""
    now = timezone.now()
    ended = None if ended_days_ago is None else now - dt.timedelta(days=ended_days_ago)
    runs = [
        Run(id=f"{prefix}{i:05d}", workflow_name="Generator", definitions={},
            definitions_hash="x", enterprise_id="acme", status=status, ended_at=ended,
            last_seq=events, flip_count=1 if events else 0)
        for i in range(count)
    ]
    Run.objects.bulk_create(runs, batch_size=2000)
    RunSnapshot.objects.bulk_create(
        [RunSnapshot(run=run, seq=0, state={}) for run in runs], batch_size=2000)
    if events:
        RunEvent.objects.bulk_create(
            [RunEvent(run=run, seq=seq, type="agent_text", payload={"seq": seq})
             for run in runs for seq in range(1, events + 1)], batch_size=5000)
        Flip.objects.bulk_create(
            [Flip(run=run, variable="done", value=True, seq=1) for run in runs], batch_size=2000)
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(
        started_at=now - dt.timedelta(days=(ended_days_ago or 60) + 1))
    return [r.pk for r in runs]


def test_prune_deletes_old_ended_runs_in_constant_queries_and_never_a_running_one():
    old = runs_of(6_000, prefix="old", status="completed", ended_days_ago=40, events=2)
    crashed = runs_of(1_000, prefix="crash", status="failed", ended_days_ago=45)
    recent = runs_of(1_000, prefix="new", status="completed", ended_days_ago=5, events=1)
    running = runs_of(2_000, prefix="run", status="running", ended_days_ago=None, events=2)
    cutoff = timezone.now() - dt.timedelta(days=30)

    counts = []
    total = retention.Pruned()
    while True:
        with CaptureQueriesContext(connection) as queries:
            batch = retention.runs_prune_batch(cutoff=cutoff, size=500)
        if not batch.runs:
            break
        counts.append(len(queries))
        total.add(batch)
    assert len(set(counts)) == 1, counts  # the same queries for every batch
    assert total.runs == len(old) + len(crashed) and total.batches == 14
    assert total.events == 2 * len(old) and total.flips == len(old)
    assert total.snapshots == len(old) + len(crashed)
    left = set(Run.objects.values_list("pk", flat=True))
    assert left == set(recent) | set(running)
    assert RunEvent.objects.filter(run_id__in=running).count() == 2 * len(running)
    assert RunSnapshot.objects.count() == len(recent) + len(running)
    assert not RunEvent.objects.filter(run_id__in=old[:10]).exists()


def test_prune_runs_command_dry_run_progress_and_default(settings, capsys):
    runs_of(30, prefix="old", status="completed", ended_days_ago=12, events=3)
    runs_of(5, prefix="run", status="running", ended_days_ago=None)
    call_command("prune_runs", "--older-than", "10d", "--dry-run")
    out = capsys.readouterr().out
    assert "dry run: would delete 30 ended run(s)" in out and "(90 events, 30 flips)" in out
    assert Run.objects.count() == 35
    settings.RUNS_RETENTION_DAYS = 20
    call_command("prune_runs")  # the setting's 20 days: nothing that old
    assert "nothing to delete" in capsys.readouterr().out
    terminal = Terminal()
    call_command("prune_runs", "--older-than", "240h", "--batch-size", "7", stdout=terminal)
    out = terminal.getvalue()
    assert "[" + "#" * 30 + "] 30/30 runs, 90 events" in out
    assert "deleted 30 runs, 90 events, 30 flips and 30 snapshots in 5 batch(es)" in out
    assert Run.objects.count() == 5


def test_prune_runs_from_a_timer_writes_no_progress_bar(capsys):
    """Run by a systemd timer or cron (stdout not a terminal), the journal or the mail gets
    two plain lines, not one line of carriage-return redrawn bars per batch."""
    runs_of(30, prefix="old", status="completed", ended_days_ago=12, events=3)
    call_command("prune_runs", "--older-than", "10d", "--batch-size", "7")
    out = capsys.readouterr().out
    assert "\r" not in out and "#" not in out, out
    assert out.splitlines() == [
        out.splitlines()[0],
        "deleted 30 runs, 90 events, 30 flips and 30 snapshots in 5 batch(es)",
    ]
    assert out.startswith("deleting 30 ended run(s)")


class Terminal(io.StringIO):
    """An operator's terminal: the command draws its progress bar."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("args", "message"), [
    (["--older-than", "a month"], "--older-than: expected"),
    (["--batch-size", "0"], "--batch-size: between 1 and 10000"),
])
def test_prune_runs_refuses_bad_arguments(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("prune_runs", *args)


@pytest.mark.django_db(transaction=True)
def test_prune_while_a_run_ingests_leaves_the_running_run_whole():
    """The server ingests into a running run while prune_runs deletes ended ones, batch by
    batch: no event is lost or refused, and only ended runs go."""
    import threading

    from django.db import connections

    from contextadmin.services import workflow_import
    from runs.services import ingest, lifecycle
    from tests.support.demo import demo_config

    workflow_import(name="Generator", data=demo_config())
    live = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    old = runs_of(2_000, prefix="old", status="completed", ended_days_ago=40, events=3)
    errors: list[BaseException] = []

    def ingest_loop() -> None:
        try:
            for index in range(150):
                ingest.event_ingest(run_id=live.pk, events=[
                    {"type": "agent_text", "agent": "user", "text": f"m{index}"}])
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    writer = threading.Thread(target=ingest_loop)
    writer.start()
    total = retention.runs_prune(cutoff=timezone.now() - dt.timedelta(days=30), batch_size=100)
    writer.join(timeout=120)
    assert not errors, errors
    assert total.runs == len(old)
    live.refresh_from_db()
    assert live.status == "running" and live.last_seq == 150
    assert RunEvent.objects.filter(run=live).count() == 150
    assert not Run.objects.filter(pk__in=old).exists()
