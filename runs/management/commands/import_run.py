import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from contextadmin.errors import ApiError
from runs.services.run_import import run_import


class Command(BaseCommand):
    help = (
        "Load a run exported as JSONL (the run page's Download, or GET /api/runs/<id>/events/"
        "?format=jsonl) as a run of this server, to inspect it here."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the .jsonl file ('-' reads standard input)")
        parser.add_argument("--run-id", help="the new run's id (default: the exported run's)")

    def handle(self, *args, file: str, run_id: str | None = None, **options):
        try:
            stream = sys.stdin if file == "-" else Path(file).open(encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"file: cannot read {file}: {exc}") from None
        try:
            with stream:
                imported = run_import(lines=stream, run_id=run_id)
        except ApiError as exc:
            raise CommandError(f"{file}: {exc.message}") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file}: not UTF-8 text ({exc})") from None
        run = imported.run
        self.stdout.write(
            f"run {run.pk}: {run.workflow_name}/{run.enterprise_id}, {imported.events} events, "
            f"{run.status}; open /runs/{run.pk}/"
        )
