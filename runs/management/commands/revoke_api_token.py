"""Revoke an API token by name (``manage.py revoke_api_token NAME``): a leaked or retired
runtime secret stops working at once in this process and within a second in the others, as
the admin's *Revoke* does. Revoking a revoked token is a no-op (exit 0), so a pipeline may
re-run it; an unknown name exits 1."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs import tokens


class Command(BaseCommand):
    help = "Revoke an API token by its name: it stops working within a second everywhere."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the token's name (as given to create_api_token)")

    def handle(self, *args: Any, name: str, **options: Any) -> None:
        token = tokens.api_token_get(name=name)
        if token is None:
            raise CommandError(f"no API token named {name!r}")
        if token.revoked:
            self.stderr.write(f"Token {token.name!r} was revoked already.")
            return
        tokens.api_token_revoke(token=token)
        self.stderr.write(f"Revoked token {token.name!r}: it stops working within a second.")
