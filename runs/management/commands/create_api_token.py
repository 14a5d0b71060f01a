"""Create an API token; the secret goes to stdout once (``TOKEN=$(manage.py create_api_token
NAME)``), what was created to stderr."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextadmin.errors import ApiError
from contextadmin.selectors import workflow_get
from runs import tokens


class Command(BaseCommand):
    help = "Create an API token for an agent runtime; the secret is printed once and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="a unique name for the token (e.g. the runtime's host)")
        parser.add_argument("--workflow", help="scope the token to one workflow")

    def handle(self, *args: Any, name: str, workflow: str | None = None, **options: Any) -> None:
        scope = None
        # Given, even empty (``--workflow "$UNSET"`` in a pipeline), it must name a workflow:
        # never fall back to a token that reads every workflow.
        if workflow is not None:
            scope = workflow_get(name=workflow)
            if scope is None:
                raise CommandError(f"--workflow: no workflow named {workflow!r}")
        try:
            token, secret = tokens.api_token_create(name=name, workflow=scope)
        except ApiError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(
            f"Created token {token.name!r}"
            + (f" for workflow {scope.name}" if scope else "")
            + ". Store the secret now: it is not shown again."
        )
        self.stdout.write(secret)
