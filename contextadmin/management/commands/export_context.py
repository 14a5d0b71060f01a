"""Write a workflow's context_variables.json (the same bytes as the HTTP export).

By default the published version, as pipelines get it; ``--version N`` any version,
``--version draft`` the newest. The version number goes to stderr, the bytes to stdout or -o.
"""

from typing import Any

from contextadmin_sdk.engine.format import ConfigError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextadmin.management.output import output_write
from contextadmin.selectors import (
    ENVIRONMENTS,
    VersionNotFound,
    version_parse,
    workflow_export_version,
    workflow_get,
)


class Command(BaseCommand):
    help = "Export a workflow's definitions as context_variables.json (stdout, or -o FILE)."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # --version means the definitions' version here, not Django's.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workflow", help="workflow name")
        parser.add_argument("--environment", choices=ENVIRONMENTS, default="development")
        parser.add_argument(
            "--version",
            default="",
            metavar="N|draft|published",
            help="a version number, draft (the newest) or published (the default)",
        )
        parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        workflow = workflow_get(name=options["workflow"])
        if workflow is None:
            raise CommandError(f"no workflow named {options['workflow']!r}")
        try:
            exported = workflow_export_version(
                workflow=workflow,
                environment=options["environment"],
                version=version_parse(options["version"]),
            )
        except VersionNotFound as exc:
            raise CommandError(str(exc)) from None
        except ConfigError as exc:
            raise CommandError(
                "the stored definitions break the format:\n"
                + "\n".join(f"  {i}" for i in exc.issues)
            ) from None
        if exported.number is not None:
            self.stderr.write(f"{workflow.name} version {exported.number} ({exported.status})")
        data = exported.body
        output_write(stdout=self.stdout, output=options["output"], data=data)
