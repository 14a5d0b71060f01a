import json
import time
from pathlib import Path

from contextadmin_sdk.client import ReportError, RunReporter
from contextadmin_sdk.engine import ENVIRONMENTS, RUN_ENDED_STATUSES
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from contextadmin.demo import DEMO_WORKFLOWS_BY_NAME, GENERATOR, GENERATOR_CHAT
from runs import tokens

DEMO_TOKEN_NAME = "simulate_run (demo)"  # noqa: S105  (a name, not a secret)
# The demo token's secret, kept for the next simulate_run (the database stores only its hash).
DEMO_TOKEN_FILE = Path(settings.BASE_DIR) / "var" / "simulate_run.token"


class Command(BaseCommand):
    help = (
        "Replay a scripted run through the runtime client against a running server. Without "
        f"arguments: the {GENERATOR_CHAT.name} demo's run (hand-offs, a tool, three flags, "
        "completed)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "workflow",
            nargs="?",
            default=GENERATOR_CHAT.name,
            help=f"the workflow to run (default: {GENERATOR_CHAT.name})",
        )
        parser.add_argument(
            "--events",
            type=Path,
            help="a JSON-lines file of events (default: a demo workflow's own script; for other "
            f"workflows {GENERATOR.name}'s, which has no hand-off events)",
        )
        parser.add_argument("--delay", type=float, default=0.5, help="seconds between events")
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--enterprise-id", default="acme")
        parser.add_argument("--run-id")
        parser.add_argument("--environment", choices=ENVIRONMENTS)
        parser.add_argument(
            "--no-complete",
            action="store_true",
            help="leave the run open when the file does not end it (default: end it completed)",
        )
        parser.add_argument(
            "--token",
            help=f"an API token (default: the token {DEMO_TOKEN_NAME!r} of this database, "
            "created once and reused)",
        )

    def handle(self, *args, **options):
        path = options["events"] or demo_events_path(workflow=options["workflow"])
        events = self._read_events(path)
        ends = (
            bool(events)
            and events[-1]["type"] == "run_status"
            and events[-1].get("status") in RUN_ENDED_STATUSES
        )
        if not ends and not options["no_complete"]:  # a demo run that ends, as real ones do
            events.append({"type": "run_status", "status": "completed"})
        token = options["token"] or self._local_token()
        reporter = RunReporter(options["url"], token, batch_size=1 if options["delay"] else 100)
        try:
            run_id = reporter.start(
                workflow=options["workflow"],
                enterprise_id=options["enterprise_id"],
                run_id=options["run_id"],
                environment=options["environment"],
            )
            link = f"{options['url'].rstrip('/')}/runs/{run_id}/"
            self.stdout.write(f"run {run_id}: {link}")
            for event in events:
                seq = reporter.event(**event)
                reporter.flush()
                self.stdout.write(event_line(seq=seq, event=event))
                if options["delay"]:
                    time.sleep(options["delay"])
            reporter.close()
        except ReportError as exc:
            raise CommandError(str(exc)) from None
        for flip in reporter.flips:
            self.stdout.write(f"flipped {flip['name']} -> {flip['value']} at #{flip['seq']}")
        last = events[-1] if events else {}
        ended = last.get("status") if last.get("type") == "run_status" else None
        self.stdout.write(
            f"done: {len(events)} events, last seq {reporter.last_acked_seq}, "
            + (f"run_status {ended}: {link}" if ended else f"the run goes on: {link}")
        )

    def _read_events(self, path: Path) -> list[dict]:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--events: cannot read {path}: {exc}") from None
        events = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CommandError(f"{path}:{number}: not valid JSON ({exc})") from None
            if number == 1 and isinstance(event, dict) and "run" in event and "type" not in event:
                continue  # the header of a run's JSONL export (import_run reads it)
            if not isinstance(event, dict) or "type" not in event:
                raise CommandError(
                    f"{path}:{number}: each line must be an event object with a type"
                )
            event.pop("seq", None)
            events.append(event)
        return events

    def _local_token(self) -> str:
        """Reuse the one demo token (its secret kept in var/), or replace it: never a new token
        per run."""
        try:
            secret = DEMO_TOKEN_FILE.read_text().strip()
        except OSError:
            secret = ""
        token = tokens.api_token_authenticate(secret=secret) if secret else None
        if token is not None and token.name == DEMO_TOKEN_NAME:
            return secret
        _, secret = tokens.api_token_rotate(name=DEMO_TOKEN_NAME)
        DEMO_TOKEN_FILE.parent.mkdir(parents=True, exist_ok=True)
        DEMO_TOKEN_FILE.touch(mode=0o600)
        DEMO_TOKEN_FILE.write_text(secret + "\n")
        return secret


def event_line(*, seq: int, event: dict) -> str:
    """One replayed event as demo_ag2 lists it: who acted, a hand-off's target, a status."""
    who = event.get("agent") or event.get("tool") or event.get("name") or event.get("status")
    target = f" -> {event['target']}" if event["type"] == "handoff" and "target" in event else ""
    return f"  #{seq} {event['type']} {who or ''}{target}"


def demo_events_path(*, workflow: str) -> Path:
    """The script to replay when none is given: a demo workflow's own (GeneratorChat's refers to
    its hand-off rules), else Generator's, whose events fit any workflow."""
    demo = DEMO_WORKFLOWS_BY_NAME.get(workflow, GENERATOR)
    return demo.events_path
