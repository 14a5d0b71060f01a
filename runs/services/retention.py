"""Retention: delete ended runs older than a cut-off, with their events, flips and snapshots.

Safe while the server ingests: only runs that have ended are deleted (ingest refuses events for
an ended run, and never reopens one), each batch is its own short transaction (an SQLite writer
waits one batch at most), and the status is checked again inside the DELETE.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction

from runs.models import Flip, Run, RunEvent, RunSnapshot
from runs.selectors import runs_ended_before

BATCH_SIZE = 500


@dataclass
class Pruned:
    runs: int = 0
    events: int = 0
    flips: int = 0
    snapshots: int = 0
    batches: int = 0
    run_ids: list[str] = field(default_factory=list, repr=False)  # of the last batch

    def add(self, other: Pruned) -> None:
        self.runs += other.runs
        self.events += other.events
        self.flips += other.flips
        self.snapshots += other.snapshots
        self.batches += 1


def runs_prune_batch(*, cutoff: dt.datetime, size: int = BATCH_SIZE) -> Pruned:
    """Delete up to ``size`` runs that ended before ``cutoff``, oldest first (constant queries
    per batch: one to pick the ids, one DELETE per table)."""
    with transaction.atomic():
        ids = list(
            runs_ended_before(cutoff=cutoff)
            .order_by("ended_at", "pk")
            .values_list("pk", flat=True)[:size]
        )
        if not ids:
            return Pruned()
        # Children first, each one DELETE ... WHERE run_id IN (...) (Django's fast delete: no
        # rows loaded, no signals), then the runs, still only if they have ended.
        events, _ = RunEvent.objects.filter(run_id__in=ids).delete()
        flips, _ = Flip.objects.filter(run_id__in=ids).delete()
        snapshots, _ = RunSnapshot.objects.filter(run_id__in=ids).delete()
        _, deleted = runs_ended_before(cutoff=cutoff).filter(pk__in=ids).delete()
        runs = deleted.get(Run._meta.label, 0)
    return Pruned(
        runs=runs, events=events, flips=flips, snapshots=snapshots, batches=1, run_ids=ids
    )


def runs_prune(
    *,
    cutoff: dt.datetime,
    batch_size: int = BATCH_SIZE,
    pause_s: float = 0.0,
    on_batch: Callable[[Pruned], None] | None = None,
) -> Pruned:
    """Delete every run that ended before ``cutoff``, a batch at a time; ``on_batch`` gets the
    running totals after each batch (the command's progress bar)."""
    total = Pruned()
    while True:
        batch = runs_prune_batch(cutoff=cutoff, size=batch_size)
        if not batch.runs:
            return total
        total.add(batch)
        if on_batch is not None:
            on_batch(total)
        if pause_s:
            time.sleep(pause_s)  # let the server's writers in between batches
