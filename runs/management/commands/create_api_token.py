from django.core.management.base import BaseCommand, CommandError

from contextadmin.errors import ApiError
from contextadmin.models import Workflow
from runs import tokens


class Command(BaseCommand):
    help = "Create an API token for an agent runtime; the secret is printed once and never stored."

    def add_arguments(self, parser):
        parser.add_argument("name", help="a unique name for the token (e.g. the runtime's host)")
        parser.add_argument("--workflow", help="scope the token to one workflow")

    def handle(self, *args, name: str, workflow: str | None = None, **options):
        scope = None
        if workflow:
            scope = Workflow.objects.filter(name=workflow).first()
            if scope is None:
                raise CommandError(f"--workflow: no workflow named {workflow!r}")
        try:
            token, secret = tokens.api_token_create(name=name, workflow=scope)
        except ApiError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(
            f"Created token {token.name!r}"
            + (f" for workflow {workflow}" if scope else "")
            + ". Store the secret now: it is not shown again."
        )
        self.stdout.write(secret)
