"""Write the JSON Schema of context_variables.json (docs/context_variables.schema.json)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from contextadmin.management.output import output_write
from contextadmin.selectors import schema_export_bytes


class Command(BaseCommand):
    help = "Write the format's JSON Schema (stdout, or -o FILE)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        data = schema_export_bytes()
        output_write(stdout=self.stdout, output=options["output"], data=data)

