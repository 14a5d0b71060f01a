import datetime as dt
import re

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from runs.selectors import prune_plan
from runs.services.retention import BATCH_SIZE, Pruned, runs_prune

AGE = re.compile(r"^(\d{1,6})([dhm]?)$")
UNITS = {"d": "days", "h": "hours", "m": "minutes", "": "days"}
BAR_WIDTH = 30


def parse_age(text: str) -> dt.timedelta:
    """Read ``30d``, ``12h``, ``90m`` or a bare number of days."""
    match = AGE.match(text.strip())
    if match is None:
        raise CommandError(f"--older-than: expected e.g. 30d, 12h or 90m, got {text!r}")
    return dt.timedelta(**{UNITS[match.group(2)]: int(match.group(1))})


class Command(BaseCommand):
    help = (
        "Delete ended runs (completed, failed, cancelled) that ended before the cut-off, with "
        "their events, flips and snapshots, in batches; running runs are never touched."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            help="age of the runs to delete: 30d, 12h, 90m (default: RUNS_RETENTION_DAYS days)",
        )
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
        parser.add_argument(
            "--pause", type=float, default=0.0, help="seconds to wait between batches"
        )

    def handle(self, *args, older_than=None, dry_run=False, batch_size=BATCH_SIZE, pause=0.0,
               **options):
        if not 0 < batch_size <= 10_000:
            raise CommandError(f"--batch-size: between 1 and 10000, got {batch_size}")
        age = parse_age(older_than) if older_than else dt.timedelta(
            days=settings.RUNS_RETENTION_DAYS
        )
        cutoff = timezone.now() - age
        plan = prune_plan(cutoff=cutoff)
        what = (
            f"{plan.runs} ended run(s) that ended before {cutoff:%Y-%m-%d %H:%M} UTC "
            f"({plan.events} events, {plan.flips} flips)"
        )
        if dry_run:
            self.stdout.write(f"dry run: would delete {what}")
            return
        if not plan.runs:
            self.stdout.write(f"nothing to delete: {what}")
            return
        self.stdout.write(f"deleting {what}")

        def progress(total: Pruned) -> None:
            if not self.stdout.isatty():  # a timer's journal or cron's mail: the last line only
                return
            done = min(total.runs, plan.runs)
            filled = BAR_WIDTH * done // plan.runs
            self.stdout.write(
                f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{plan.runs} runs, "
                f"{total.events} events",
                ending="",
            )
            self.stdout.flush()

        total = runs_prune(cutoff=cutoff, batch_size=batch_size, pause_s=pause, on_batch=progress)
        if self.stdout.isatty():
            self.stdout.write("")  # ends the progress bar's line
        self.stdout.write(
            f"deleted {total.runs} runs, {total.events} events, {total.flips} flips and "
            f"{total.snapshots} snapshots in {total.batches} batch(es)"
        )
