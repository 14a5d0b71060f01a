"""Write a workflow's context_variables.json (the same bytes as the HTTP export)."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextadmin.management.output import write_bytes
from contextadmin.selectors import ENVIRONMENTS, workflow_export, workflow_get
from runs.engine.format import ConfigError


class Command(BaseCommand):
    help = "Export a workflow's definitions as context_variables.json (stdout, or -o FILE)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workflow", help="workflow name")
        parser.add_argument("--environment", choices=ENVIRONMENTS, default="development")
        parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        workflow = workflow_get(name=options["workflow"])
        if workflow is None:
            raise CommandError(f"no workflow named {options['workflow']!r}")
        try:
            data = workflow_export(workflow=workflow, environment=options["environment"])
        except ConfigError as exc:
            raise CommandError(
                "the stored definitions break the format:\n"
                + "\n".join(f"  {i}" for i in exc.issues)
            ) from None
        if options["output"]:
            try:
                Path(options["output"]).write_bytes(data)
            except OSError as exc:
                raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from None
        else:
            write_bytes(self.stdout, data)

