import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from runs.client import ReportError, RunReporter
from runs.services import tokens

DEMO_EVENTS = Path(__file__).resolve().parents[3] / "contextadmin" / "demo" / "run_events.jsonl"


class Command(BaseCommand):
    help = "Replay a scripted run through the runtime client against a running server."

    def add_arguments(self, parser):
        parser.add_argument("workflow")
        parser.add_argument(
            "--events", type=Path, default=DEMO_EVENTS, help="a JSON-lines file of events"
        )
        parser.add_argument("--delay", type=float, default=0.5, help="seconds between events")
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--enterprise-id", default="acme")
        parser.add_argument("--run-id")
        parser.add_argument("--environment", choices=["development", "production"])
        parser.add_argument("--token", help="an API token (default: a new one in this database)")

    def handle(self, *args, **options):
        events = self._read_events(options["events"])
        token = options["token"] or self._local_token()
        reporter = RunReporter(options["url"], token, batch_size=1 if options["delay"] else 100)
        try:
            run_id = reporter.start(
                workflow=options["workflow"],
                enterprise_id=options["enterprise_id"],
                run_id=options["run_id"],
                environment=options["environment"],
            )
            self.stdout.write(f"run {run_id}: {options['url'].rstrip('/')}/runs/{run_id}/")
            for event in events:
                seq = reporter.event(**event)
                reporter.flush()
                self.stdout.write(
                    f"  #{seq} {event['type']} {event.get('agent') or event.get('tool') or ''}"
                )
                if options["delay"]:
                    time.sleep(options["delay"])
            reporter.close()
        except ReportError as exc:
            raise CommandError(str(exc)) from None
        for flip in reporter.flips:
            self.stdout.write(f"flipped {flip['name']} -> {flip['value']} at #{flip['seq']}")
        self.stdout.write(f"done: {len(events)} events, last seq {reporter.last_acked_seq}")

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
            if not isinstance(event, dict) or "type" not in event:
                raise CommandError(
                    f"{path}:{number}: each line must be an event object with a type"
                )
            event.pop("seq", None)
            events.append(event)
        return events

    def _local_token(self) -> str:
        name = f"simulate_run-{int(time.time() * 1000)}"
        _, secret = tokens.api_token_create(name=name)
        return secret
