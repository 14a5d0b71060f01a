"""manage.py webhook_add URL [--workflow W] --events E,... [--flags a,b] [--end-statuses s,...]
[--format standard|slack]: add a webhook subscription and print its signing secret once."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextadmin.models import Workflow
from runs.webhooks.models import EVENTS, FORMATS
from runs.webhooks.services.subscriptions import subscription_create


class Command(BaseCommand):
    help = "Add a webhook subscription; prints its signing secret (whsec_...) once."
    # the options that are subscription_create's arguments by the same name (it checks them)
    fields = ("url", "events", "flags", "end_statuses", "format")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="where to POST (https://; see docs/webhooks.md)")
        parser.add_argument("--workflow", default="", help="only this workflow (default: all)")
        parser.add_argument(
            "--events", required=True, help=f"comma-separated, of: {', '.join(EVENTS)}"
        )
        parser.add_argument("--flags", default="", help="flag_flipped only for these flags")
        parser.add_argument("--end-statuses", default="", help="run_ended only for these statuses")
        parser.add_argument("--format", default="standard", help=f"one of {', '.join(FORMATS)}")

    def handle(self, *args: Any, **options: Any) -> None:
        workflow = None
        if options["workflow"]:
            workflow = Workflow.objects.filter(name=options["workflow"]).first()
            if workflow is None:
                raise CommandError(f"workflow: no workflow named {options['workflow']!r}")
        fields = {name: options[name] for name in self.fields}
        try:
            subscription, secret = subscription_create(workflow=workflow, **fields)
        except ValidationError as exc:
            raise CommandError(
                "; ".join(f"{field}: {' '.join(m)}" for field, m in exc.message_dict.items())
            ) from None
        self.stderr.write(
            f"subscription {subscription.pk} added: {', '.join(subscription.events)} -> "
            f"{subscription.url}; its signing secret (shown once; rotate it in the admin):"
        )
        self.stdout.write(secret)
