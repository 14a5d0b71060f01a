"""Run the demo AG2 workflow (scripted agents, no LLM) and stream it into a running server:
on AG2 1.x by default (a workflow channel), on AG2 Classic with ``--classic`` (a group chat)."""

import asyncio
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.client.definitions import DefinitionsError
from contextadmin_sdk.engine import mongo_client
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from contextadmin.demo import DEMO_WORKFLOWS_BY_NAME, demo_workflow_import
from runs.demo_chats.generator import DEMO_WORKFLOW
from runs.models import ApiToken
from runs.tokens import api_token_authenticate, api_token_create

DEMO_RUNTIME_NAME = "demo_ag2"
START_WAIT_S = 10.0  # how long to wait for the run start's answer before the chat goes on
MONGO_PORT_DEFAULT = "27018"  # scripts/run's MONGO_PORT unless it was given another


def event_line(*, event: dict[str, Any]) -> str:
    """One reported event as the command lists it: who acted (a run_status: its status)."""
    who = event.get("agent") or event.get("tool") or event.get("name") or event.get("status")
    extra = f" -> {event['target']}" if event["type"] == "handoff" else ""
    return f"  #{event['seq']} {event['type']} {who or ''}{extra}"


def definitions_unreachable(*, exc: DefinitionsError, url: str) -> str:
    """The SDK's message suggests passing an exported file, which this command cannot take (it
    streams into a server): name the fix that works here, reaching the server."""
    if exc.status == 400 and ": 400 Bad Request;" in str(exc):  # Django's bare page, no cause
        return (
            f"{url} answered 400 Bad Request without saying why: Django's answer to a host name "
            "it does not serve. Give --url an address among the server's DJANGO_ALLOWED_HOSTS "
            "(scripts/run's line `run: ready: open URL` names one; HOST=0.0.0.0 scripts/run "
            "adds this machine's names and addresses)"
        )
    if exc.status is not None:  # the server answered: its refusal names the cause and fix
        return str(exc)
    cause = str(exc).split(" and none are cached", 1)[0]
    return (
        f"{cause}: is the server running at {url}? demo_ag2 streams the run into it: start it "
        "(scripts/run) or pass --url with the address it serves"
    )


@dataclass(frozen=True)
class DemoRun:
    """What the demo runs with, on either framework."""

    config: Any
    reporter: RunReporter
    enterprise_id: str
    delay: float
    spool_dir: Path | None
    mongo: Any
    started: Callable[[str | None], None]  # told the run's id once the session has one

    def attach_options(self) -> dict[str, Any]:
        """The keyword arguments both adapters' ``attach`` take alike."""
        return {
            "workflow_name": DEMO_WORKFLOW,
            "enterprise_id": self.enterprise_id,
            "mongo": self.mongo,
            "reporter": self.reporter,
            "spool_dir": self.spool_dir,
        }


class Command(BaseCommand):
    help = (
        "Run a real AG2 workflow with scripted, LLM-free agents following the GeneratorChat "
        "demo workflow (hand-offs, a tool, three derived flags) and stream it to the server: "
        "an AG2 1.x workflow channel, or with --classic an AG2 Classic group chat."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running server")
        parser.add_argument(
            "--token",
            help=f"an API token (default: the {DEMO_RUNTIME_NAME!r} token of this database, "
            "created once and kept in var/)",
        )
        parser.add_argument("--enterprise-id", default="acme")
        parser.add_argument("--delay", type=float, default=0.5, help="seconds per scripted turn")
        parser.add_argument("--spool-dir", type=Path, help="keep a JSONL spool of the run here")
        parser.add_argument(
            "--classic",
            action="store_true",
            help="run the AG2 Classic group chat (the autogen extra) instead of AG2 1.x",
        )
        parser.add_argument(
            "--token-file",
            type=Path,
            help=f"where the demo token's secret is kept (default: var/{DEMO_RUNTIME_NAME}.token)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            run_demo = self._classic() if options["classic"] else self._ag2x()
        except ImportError as exc:
            extra = "autogen" if options["classic"] else "ag2"
            raise CommandError(f'{exc} (install the extra: pip install "./sdk[{extra}]")') from None
        logging.getLogger("autogen").setLevel(logging.WARNING)
        imported = demo_workflow_import(workflow=DEMO_WORKFLOWS_BY_NAME[DEMO_WORKFLOW])
        if imported is not None:  # demo_setup imports it; a database of your own may lack it
            self.stdout.write(f"demo_ag2: imported the demo workflow {imported.name}")
        token = options["token"] or self._demo_token(options["token_file"])
        url = options["url"].rstrip("/")
        mongo = self._mongo()
        reporter = RunReporter(url, token)

        def started(run_id: str | None) -> None:
            if reporter.wait_started(START_WAIT_S):  # a link only to a run that exists
                self.stdout.write(f"run {run_id}: {url}/runs/{run_id}/")
            else:
                self.stderr.write(
                    f"demo_ag2: no run started yet ({reporter.error or 'no answer from ' + url}); "
                    "the workflow goes on and its events are kept"
                )

        try:
            try:  # the published definitions, from the server: any directory, after any edit
                config = reporter.definitions(DEMO_WORKFLOW)
            except DefinitionsError as exc:
                raise CommandError(definitions_unreachable(exc=exc, url=url)) from None
            session = run_demo(
                DemoRun(
                    config=config,
                    reporter=reporter,
                    enterprise_id=options["enterprise_id"],
                    delay=options["delay"],
                    spool_dir=options["spool_dir"],
                    mongo=mongo,
                    started=started,
                )
            )
        finally:
            if mongo is not None:
                mongo.close()
        for event in session.events:
            self.stdout.write(event_line(event=event))
        for flip in session.flips:
            self.stdout.write(f"flipped {flip.name} -> {flip.value}")
        if reporter.error or reporter.last_acked_seq < session.state.last_seq:
            raise CommandError(
                f"the server acknowledged {reporter.last_acked_seq} of {session.state.last_seq} "
                f"events ({reporter.error or 'is it running at ' + url + '?'})"
            )
        self.stdout.write(
            f"done: {session.state.last_seq} events, run_status completed: "
            f"{url}/runs/{session.run_id}/"
        )

    def _ag2x(self) -> Callable[[DemoRun], Any]:
        """The demo as an AG2 1.x workflow channel on an in-process hub."""
        from contextadmin_sdk.integrations.ag2 import attach

        from runs.demo_chats.ag2_workflow import demo_workflow, run_demo

        def run(demo_run: DemoRun) -> Any:
            async def main() -> Any:
                demo = await demo_workflow(delay=demo_run.delay)
                session = attach(
                    demo.graph, demo_run.config, hub=demo.hub, agents=demo.agents,
                    **demo_run.attach_options(),
                )
                demo_run.started(session.run_id)
                try:
                    async with session:
                        await run_demo(demo, session, timeout=60 + 40 * demo_run.delay)
                finally:
                    await demo.hub.close()
                return session

            return asyncio.run(main())

        return run

    def _classic(self) -> Callable[[DemoRun], Any]:
        """The demo as an AG2 Classic group chat."""
        from autogen.agentchat import initiate_group_chat
        from contextadmin_sdk.integrations.autogen import attach

        from runs.demo_chats.autogen_chat import OPENING, demo_pattern

        def run(demo_run: DemoRun) -> Any:
            pattern = demo_pattern(delay=demo_run.delay)
            session = attach(pattern, demo_run.config, **demo_run.attach_options())
            demo_run.started(session.run_id)
            with session:
                initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
            return session

        return run

    def _mongo(self) -> Any:
        """The runtime looks up the database variable (concept_overview) itself, as a real one
        does: with settings.MONGODB_URI when set, else the run starts with it unresolved."""
        if settings.MONGODB_URI:
            return mongo_client(settings.MONGODB_URI, timeout_ms=2000)
        port = os.environ.get("MONGO_PORT") or MONGO_PORT_DEFAULT  # as scripts/run picks it
        self.stdout.write(
            "demo_ag2: MONGODB_URI unset, so concept_overview stays unresolved; to look it up "
            f"in the MongoDB scripts/run started, prefix MONGODB_URI=mongodb://127.0.0.1:{port} "
            f"(its MONGO_PORT, {MONGO_PORT_DEFAULT} unless you gave it another: scripts/run "
            "prints the whole command)"
        )
        return None

    def _demo_token(self, path: Path | None) -> str:
        """Reuse the one demo token (its secret kept in var/), or create it once."""
        path = path or Path(settings.BASE_DIR) / "var" / f"{DEMO_RUNTIME_NAME}.token"
        if path.exists():
            secret = path.read_text().strip()
            if api_token_authenticate(secret=secret) is not None:
                return secret
        ApiToken.objects.filter(name=DEMO_RUNTIME_NAME).delete()  # its secret is lost: replace it
        _, secret = api_token_create(name=DEMO_RUNTIME_NAME)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secret + "\n")
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        self.stdout.write(f"demo_ag2: created the API token {DEMO_RUNTIME_NAME!r} ({path})")
        return secret
