"""Write the JSON Schema of context_variables.json (docs/context_variables.schema.json)."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextadmin.management.output import write_bytes
from contextadmin.selectors import schema_export_bytes


class Command(BaseCommand):
    help = "Write the format's JSON Schema (stdout, or -o FILE)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        data = schema_export_bytes()
        if options["output"]:
            try:
                Path(options["output"]).write_bytes(data)
            except OSError as exc:
                raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from None
        else:
            write_bytes(self.stdout, data)

