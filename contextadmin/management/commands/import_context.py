"""Import a context_variables.json into a workflow: validated, diffed, applied atomically."""

import sys
from pathlib import Path
from typing import Any

from contextadmin_sdk.engine.format import ConfigError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextadmin import selectors, specs
from contextadmin.services import ImportRefused, workflow_import


class Command(BaseCommand):
    help = (
        "Import a context_variables.json as the definitions of a workflow (created if new). "
        "A rejected file changes nothing; errors name JSON paths."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="path to context_variables.json, or - for stdin")
        parser.add_argument("--workflow", required=True, help="workflow name")
        parser.add_argument(
            "--replace", action="store_true", help="replace the definitions of an existing workflow"
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="validate and diff; change nothing"
        )
        parser.add_argument(
            "--comment", default="", help="note recorded with the new version (History)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data = self._read(options["file"])
        refusal = self._review_refusal(name=options["workflow"])
        if refusal and not options["dry_run"]:
            raise CommandError(refusal)
        self._import(data=data, options=options)
        if refusal:  # a dry run shows the diff, then answers as the import would: a gate
            raise CommandError(f"{refusal} (dry run: the import would be refused)")

    def _import(self, *, data: bytes, options: dict[str, Any]) -> None:
        """Import (or dry-run) the file and print the diff and the outcome."""
        try:
            result = workflow_import(
                name=options["workflow"],
                data=data,
                replace=options["replace"],
                dry_run=options["dry_run"],
                comment=options["comment"],
            )
        except ConfigError as exc:
            document = specs.decoded_document(data)
            for issue in exc.issues:
                self.stderr.write(f"error: {specs.issue_label(issue, document)}")
            count = len(exc.issues)
            problems = f"{count} problem{'s' if count != 1 else ''}"
            raise CommandError(f"rejected {options['file']}: {problems}; nothing changed") from None
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        for line in result.diff.lines():
            self.stdout.write(line)
        if result.unchanged is not None:
            self.stdout.write(
                f"unchanged: workflow {options['workflow']} already has these definitions "
                f"(version {result.unchanged.number}); no new version"
            )
            return
        verb = "would create" if result.created else "would replace"
        if not options["dry_run"]:
            verb = "created" if result.created else "replaced"
        self.stdout.write(f"{verb} workflow {options['workflow']}: {result.diff.summary()}")
        if result.version is not None:
            state = (
                "published"
                if result.version.published_at is not None
                else "a draft awaiting review (CONTEXTADMIN_REVIEW=on)"
            )
            self.stdout.write(f"version {result.version.number}, {state}")

    def _review_refusal(self, *, name: str) -> str | None:
        """Say why the import may not publish over a draft awaiting review (None: it may):
        the server made the draft with review on, so this process (review off) was started
        without the server's settings."""
        if selectors.review_required():
            return None
        workflow = selectors.workflow_get(name=name)
        head = selectors.workflow_head(workflow=workflow) if workflow is not None else None
        if head is None or head.published_at is not None:
            return None
        return (
            f"version {head.number} of {name} is a draft awaiting review, and this process "
            "has CONTEXTADMIN_REVIEW off: importing would publish over it unreviewed. Run "
            "the command with the server's settings (CONTEXTADMIN_REVIEW=on) to add a "
            "draft, or have it approved in the admin (History) first; nothing changed"
        )

    def _read(self, name: str) -> bytes:
        if name == "-":
            return sys.stdin.buffer.read()
        try:
            return Path(name).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {name}: {exc.strerror}") from None
