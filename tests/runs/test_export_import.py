"""A run's log out and back in: ``GET /api/runs/<id>/events/`` (paginated JSON, streamed JSONL
under the real ASGI application), ``import_run`` (the replayed state equals the original's),
and ``simulate_run`` reading the same file and reusing one demo token."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.utils import timezone

from contextadmin.asgi import application
from runs import selectors, tokens
from runs.models import ApiToken, Flip, Run, RunEvent
from runs.services import ingest, lifecycle
from runs.state import run_state_at
from tests.support.demo import demo_config, demo_events

pytestmark = [pytest.mark.django_db(transaction=True)]


RUNTIME = {"framework": "autogen", "version": "0.14.1", "sdk": "0.1.0"}


def _setup(*, events: list[dict] | None = None, run_id: str = "orig") -> str:
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())
    workflow_import(name="Other", data=demo_config())
    lifecycle.run_start(
        workflow_name="Generator", enterprise_id="acme", run_id=run_id, runtime=RUNTIME
    )
    events = demo_events() if events is None else events
    if events:
        ingest.event_ingest(run_id=run_id, events=events)
    return tokens.api_token_create(name="rt")[1]


def _full_run() -> list[dict]:
    return [*demo_events(), {"type": "run_status", "status": "completed"}]


async def get(
    path: str, secret: str | None, *, keep: bool = True, method: str = "GET"
) -> dict[str, Any]:
    """GET through the real ASGI application (Django's streaming end message carries no body,
    which channels' HttpCommunicator refuses); ``keep=False`` counts the body and drops it."""
    path, _, query = path.partition("?")
    headers = [(b"host", b"testserver")]
    if secret is not None:
        headers.append((b"authorization", f"Bearer {secret}".encode()))
    scope = {
        "type": "http", "method": method, "path": path, "query_string": query.encode(),
        "headers": headers, "http_version": "1.1", "scheme": "http",
        "server": ("testserver", 80), "client": ("127.0.0.1", 1), "root_path": "",
    }
    response: dict[str, Any] = {"body": b"", "received": 0}
    requested = asyncio.Event()

    async def receive() -> dict:
        if not requested.is_set():
            requested.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never goes away
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            response["status"] = message["status"]
            response["headers"] = {
                k.decode().lower(): v.decode() for k, v in message.get("headers", [])
            }
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            response["received"] += len(body)
            if keep:
                response["body"] += body

    await application(scope, receive, send)
    return response


@pytest.mark.asyncio
async def test_events_page_by_page_as_json():
    secret = await sync_to_async(_setup)()
    total = len(demo_events())
    page = await get("/api/runs/orig/events/?limit=2", secret)
    assert page["status"] == 200
    data = json.loads(page["body"])
    assert [e["seq"] for e in data["events"]] == [1, 2]
    assert data["next_after"] == 2 and data["last_seq"] == 2 and data["run_id"] == "orig"
    rest = json.loads((await get("/api/runs/orig/events/?after=2&limit=1000", secret))["body"])
    assert [e["seq"] for e in rest["events"]] == list(range(3, total + 1))
    assert rest["next_after"] is None
    stored = await sync_to_async(lambda: list(
        RunEvent.objects.filter(run_id="orig").order_by("seq").values_list("payload", flat=True)))()
    assert data["events"] + rest["events"] == stored
    empty = json.loads((await get(f"/api/runs/orig/events/?after={total}", secret))["body"])
    assert empty["events"] == [] and empty["next_after"] is None


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ("?after=-1", 400, "after"),
        ("?limit=x", 400, "limit"),
        ("?limit=0", 400, "limit"),
        ("?limit=10001", 400, "limit"),
        ("?format=xml", 400, "format"),
    ],
)
async def test_events_refuses_bad_queries_naming_the_field(query, status, field):
    secret = await sync_to_async(_setup)()
    response = await get(f"/api/runs/orig/events/{query}", secret)
    assert response["status"] == status
    assert json.loads(response["body"])["error"].startswith(f"{field}:")


@pytest.mark.asyncio
async def test_events_needs_a_token_of_the_workflow_or_a_staff_session():
    secret = await sync_to_async(_setup)()
    assert (await get("/api/runs/orig/events/", None))["status"] == 401
    assert (await get("/api/runs/nope/events/", secret))["status"] == 404

    def scoped() -> str:
        from contextadmin.models import Workflow

        other = Workflow.objects.get(name="Other")
        return tokens.api_token_create(name="other", workflow=other)[1]

    # a run of another workflow reads as an unknown one (tests/security/test_foreign_runs.py)
    assert (await get("/api/runs/orig/events/", await sync_to_async(scoped)()))["status"] == 404


@pytest.mark.asyncio
async def test_jsonl_download_has_the_header_then_every_event():
    secret = await sync_to_async(_setup)(events=_full_run())
    response = await get("/api/runs/orig/events/?format=jsonl", secret)
    assert response["status"] == 200
    headers = response["headers"]
    assert headers["content-type"] == "application/x-ndjson"
    assert headers["content-disposition"] == 'attachment; filename="run-orig.jsonl"'
    lines = [json.loads(line) for line in response["body"].decode().splitlines()]
    header, events = lines[0], lines[1:]
    assert header["run"]["id"] == "orig" and header["run"]["status"] == "completed"
    assert header["run"]["initial_state"]["context"]["enterprise_id"] == "acme"
    assert [e["seq"] for e in events] == list(range(1, len(_full_run()) + 1))
    head = await get("/api/runs/orig/events/?format=jsonl", secret, method="HEAD")
    assert head["status"] == 200 and head["received"] == 0
    assert head["headers"]["content-disposition"] == headers["content-disposition"]
    after = await get("/api/runs/orig/events/?format=jsonl&after=3&limit=2", secret)
    assert [json.loads(x)["seq"] for x in after["body"].decode().splitlines()] == [4, 5]


def _round_trip(tmp_path: Path, body: bytes) -> tuple[Run, Run]:
    exported = tmp_path / "run.jsonl"
    exported.write_bytes(body)
    call_command("import_run", str(exported), "--run-id", "copy")
    return Run.objects.get(pk="orig"), Run.objects.get(pk="copy")


@pytest.mark.asyncio
async def test_import_run_rebuilds_the_same_run(tmp_path):
    secret = await sync_to_async(_setup)(events=_full_run())
    body = (await get("/api/runs/orig/events/?format=jsonl", secret))["body"]
    original, copy = await sync_to_async(_round_trip)(tmp_path, body)
    assert copy.state == original.state
    assert (copy.status, copy.last_seq, copy.flip_count) == (
        original.status, original.last_seq, original.flip_count)
    assert copy.definitions == original.definitions and copy.provenance == original.provenance
    assert copy.runtime == original.runtime == RUNTIME  # which runtime reported it, kept
    assert copy.started_at == original.started_at and copy.ended_at == original.ended_at

    def replayed() -> tuple[list, list, list]:
        at = [run_state_at(run=run, seq=3).state for run in (original, copy)]
        flips = [list(Flip.objects.filter(run=run).order_by("seq").values_list(
            "variable", "value", "seq")) for run in (original, copy)]
        return at, *flips

    at, flips_a, flips_b = await sync_to_async(replayed)()
    assert at[0] == at[1] and flips_a == flips_b and flips_a


EXPLICIT_AND_WARNINGS = [
    {"type": "agent_text", "agent": "InterviewAgent", "text": "hi"},
    {"type": "context_set", "name": "interview_complete", "value": True, "tool": "save_plan",
     "agent": "InterviewAgent"},
    {"type": "warning", "name": "max_items", "value": 40, "tool": "tune", "rule": "constant",
     "text": "name: declarative variable max_items is a constant: it never changes during a run"},
    {"type": "context_set", "name": "interview_complete", "value": True, "agent": "Other"},
    {"type": "run_status", "status": "completed"},
]


@pytest.mark.asyncio
async def test_explicit_flips_and_warnings_round_trip_through_the_jsonl_export(tmp_path):
    """A flag set by a tool and a refused change are in the JSONL export, and import_run
    replays them into the same state: the flip's cause and the warnings count included."""
    secret = await sync_to_async(_setup)(events=EXPLICIT_AND_WARNINGS)
    body = (await get("/api/runs/orig/events/?format=jsonl", secret))["body"]
    events = [json.loads(line) for line in body.decode().splitlines()][1:]
    assert [e["type"] for e in events] == [e["type"] for e in EXPLICIT_AND_WARNINGS]
    assert events[2] == {**EXPLICIT_AND_WARNINGS[2], "seq": 3}
    original, copy = await sync_to_async(_round_trip)(tmp_path, body)
    assert copy.state == original.state
    assert original.state["execution"]["warnings"] == 1
    assert [(f["name"], f["trigger_index"], f["cause"], f["seq"]) for f in copy.state["flips"]] == [
        ("interview_complete", None,
         {"type": "context_set", "tool": "save_plan", "agent": "InterviewAgent"}, 2)
    ]  # the same value again (#4) is no second flip
    stored = await sync_to_async(lambda: list(Flip.objects.filter(run=copy).values_list(
        "variable", "value", "trigger_index", "seq")))()
    assert stored == [("interview_complete", True, None, 2)]


def test_import_run_refuses_bad_files_naming_the_line(tmp_path, db):
    _setup(events=_full_run())
    header = selectors.run_export_header(run=Run.objects.get(pk="orig"))
    bad = tmp_path / "bad.jsonl"
    cases = [
        ("", "line 1: the file is empty"),
        ('{"type": "agent_text"}\n', "line 1: expected the run's header"),
        (json.dumps(header) + "\n{nope\n", "line 2: not valid JSON"),
        (json.dumps(header) + '\n{"type": "agent_text", "seq": 5}\n', "lines from 2:"),
        (json.dumps(header) + "\n", "run_id: a run 'orig' already exists"),
        (
            json.dumps({"run": {**header["run"], "runtime": {"framework": "a b"}}}) + "\n",
            "line 1: run.runtime.framework:",
        ),
        (
            json.dumps({"run": {**header["run"], "started_at": "2026-02-30T00:00:00"}}) + "\n",
            "line 1: run.started_at: expected a date and time .*: no such date or time",
        ),
        (
            json.dumps({"run": {**header["run"], "ended_at": "yesterday"}}) + "\n",
            "line 1: run.ended_at: expected a date and time",
        ),
        (
            json.dumps({"run": {**header["run"], "last_event_at": 5}}) + "\n",
            "line 1: run.last_event_at: expected a date and time",
        ),
        (  # the run start's rule: a newline would forge the server's log lines
            json.dumps({"run": {**header["run"], "enterprise_id": "acme\nERROR forged"}}) + "\n",
            "line 1: run.enterprise_id: letters, digits, spaces and punctuation only",
        ),
    ]
    for text, message in cases:
        bad.write_text(text)
        args = ["--run-id", "fresh"] if "already" not in message else []
        with pytest.raises(CommandError, match=message):
            call_command("import_run", str(bad), *args)
        assert not Run.objects.filter(pk="fresh").exists()  # nothing half-imported


def test_simulate_run_reads_an_export_and_reuses_one_demo_token(tmp_path, db, monkeypatch):
    from runs.management.commands import simulate_run

    _setup(events=_full_run())
    export = tmp_path / "run.jsonl"
    header = selectors.run_export_header(run=Run.objects.get(pk="orig"))
    payloads = RunEvent.objects.filter(run_id="orig").order_by("seq").values_list(
        "payload", flat=True)
    export.write_text("\n".join(json.dumps(x) for x in [header, *payloads]) + "\n")
    events = simulate_run.Command()._read_events(export)
    assert len(events) == len(_full_run()) and all("seq" not in e for e in events)

    monkeypatch.setattr(simulate_run, "DEMO_TOKEN_FILE", tmp_path / "var" / "demo.token")
    first = simulate_run.Command()._local_token()
    second = simulate_run.Command()._local_token()
    assert first == second
    assert ApiToken.objects.filter(name=simulate_run.DEMO_TOKEN_NAME).count() == 1
    (tmp_path / "var" / "demo.token").write_text("ca_00000000_lost-secret-xxxxxxxxxxxxxxxx")
    third = simulate_run.Command()._local_token()  # the secret is lost: replaced, not added
    assert third != first
    assert ApiToken.objects.filter(name=simulate_run.DEMO_TOKEN_NAME).count() == 1


def _many_events(run_id: str, count: int) -> None:
    """``count`` stored events in the run, written with the cursor's executemany (the ORM's
    bulk_create spends ~50 µs an event building models: most of a huge run's test); each
    value is prepared by the model's own field, so the rows are those the ORM would write."""
    db = connections[DEFAULT_DB_ALIAS]  # the backend itself, not the per-thread proxy
    fields = {f.attname: f for f in RunEvent._meta.concrete_fields if not f.primary_key}
    fixed = {
        "run_id": run_id,
        "type": "agent_text",
        "agent": "",
        "result": {},
        "received_at": timezone.now(),
    }
    same = {name: fields[name].get_db_prep_save(value, db) for name, value in fixed.items()}
    payload = fields["payload"].get_db_prep_save
    names = list(fields)
    table = db.ops.quote_name(RunEvent._meta.db_table)
    columns = ", ".join(db.ops.quote_name(fields[name].column) for name in names)
    values = ", ".join(["%s"] * len(names))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({values})"  # noqa: S608 (the model's names)
    with transaction.atomic(), db.cursor() as cursor:
        for first in range(1, count + 1, 10_000):
            rows = []
            for seq in range(first, min(first + 10_000, count + 1)):
                text = f"message {seq}"
                event = {"type": "agent_text", "agent": "user", "text": text, "seq": seq}
                row = {**same, "seq": seq, "payload": payload(event, db)}
                rows.append([row[name] for name in names])
            cursor.executemany(sql, rows)
    Run.objects.filter(pk=run_id).update(last_seq=count)


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("count", [400_000])  # a whole response held would pass 30 MB
async def test_a_huge_run_exports_in_constant_memory(count):
    secret = await sync_to_async(_setup)(events=[])
    await sync_to_async(_many_events)("orig", count)
    # The process's resident memory, sampled while the export streams (tracemalloc would
    # measure Python's allocations exactly, at several times the run time).
    peak = PeakRss()
    with peak:
        response = await get("/api/runs/orig/events/?format=jsonl", secret, keep=False)
    assert response["status"] == 200
    assert response["received"] > count * 50  # every event went out (~60 MB)
    assert peak.growth < 30 * 1024 * 1024, f"RSS grew {peak.growth / 1e6:.1f} MB for {count}"


class PeakRss:
    """The highest resident set size seen, every 10 ms, above the one at entry."""

    def __init__(self) -> None:
        self.start = self.peak = 0
        self._stop = threading.Event()

    @staticmethod
    def rss() -> int:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")

    @property
    def growth(self) -> int:
        return self.peak - self.start

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.rss())

    def __enter__(self) -> PeakRss:
        self.start = self.peak = self.rss()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss())


def test_an_imported_run_whose_workflow_is_not_here_still_opens(tmp_path, db, client,
                                                                  django_user_model):
    """A production run inspected on a laptop that has no such workflow: the run keeps its
    pinned definitions and its page opens (no link to definitions that are not here)."""
    _setup(events=_full_run())
    header = selectors.run_export_header(run=Run.objects.get(pk="orig"))
    header["run"]["workflow"] = "OnlyInProduction"
    payloads = RunEvent.objects.filter(run_id="orig").order_by("seq").values_list(
        "payload", flat=True)
    export = tmp_path / "run.jsonl"
    export.write_text("\n".join(json.dumps(x) for x in [header, *payloads]) + "\n")
    call_command("import_run", str(export), "--run-id", "laptop")
    run = Run.objects.get(pk="laptop")
    assert run.workflow_id is None and run.workflow_name == "OnlyInProduction"
    assert run.state == Run.objects.get(pk="orig").state
    user = django_user_model.objects.create_user("op", password="pw-12345678", is_staff=True)
    client.force_login(user)
    page = client.get("/runs/laptop/")
    assert page.status_code == 200 and 'id="workflow-definitions"' not in page.content.decode()


def test_import_run_into_its_own_server_keeps_version_last_event_and_names_the_option(
    tmp_path, db
):
    """issue 22 item 5: the copy is pinned to the original's version (not "unversioned"), shows
    the original's last event time (not the import's), and a clash names ``--run-id``."""
    import datetime as dt

    _setup(events=_full_run())
    original = Run.objects.get(pk="orig")
    assert original.workflow_version == 1
    long_ago = original.started_at + dt.timedelta(seconds=5)
    RunEvent.objects.filter(run=original, seq=original.last_seq).update(received_at=long_ago)
    header = selectors.run_export_header(run=original)
    payloads = RunEvent.objects.filter(run=original).order_by("seq").values_list(
        "payload", flat=True)
    export = tmp_path / "run.jsonl"
    export.write_text("\n".join(json.dumps(x) for x in [header, *payloads]) + "\n")

    with pytest.raises(CommandError, match=r"already exists here: .*with --run-id NEW_ID"):
        call_command("import_run", str(export))
    call_command("import_run", str(export), "--run-id", "copy")
    copy = selectors.runs_annotated(Run.objects.filter(pk="copy")).get()
    assert copy.workflow_version == 1
    assert copy.last_event_at == long_ago
    assert selectors.run_summary(run=copy)["last_event_at"] == long_ago.isoformat()


def test_import_run_pins_no_version_whose_definitions_differ(tmp_path, db):
    """A version number from another server is kept only where the definitions match here."""
    _setup(events=_full_run())
    header = selectors.run_export_header(run=Run.objects.get(pk="orig"))
    header["run"]["workflow"] = "Other"  # same definitions as Generator here: its version 1
    header["run"]["workflow_version"] = 7
    changed = json.loads(json.dumps(header))
    changed["run"]["definitions"]["context_variables"]["declarative_variables"][0]["value"] = "z"
    for name, data, expected in (("same", header, 1), ("changed", changed, None)):
        export = tmp_path / f"{name}.jsonl"
        export.write_text(json.dumps(data) + "\n")
        call_command("import_run", str(export), "--run-id", name)
        assert Run.objects.get(pk=name).workflow_version == expected


def test_import_run_keeps_the_source_refuses_another_workflows_definitions_and_is_quiet(
    tmp_path, db, caplog
):
    """An imported run says where its definitions stand here (a version, or not published here;
    never "published", which means the runtime sent none), is refused under the name of a
    workflow whose definitions they are not, as a start is, and replays its flips silently."""
    from contextadmin.services import workflow_import

    _setup(events=_full_run())
    header = selectors.run_export_header(run=Run.objects.get(pk="orig"))
    payloads = RunEvent.objects.filter(run_id="orig").order_by("seq").values_list(
        "payload", flat=True)
    export = tmp_path / "run.jsonl"
    export.write_text("\n".join(json.dumps(x) for x in [header, *payloads]) + "\n")
    caplog.clear()  # the original run's own flips, logged as it ran
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk"):
        call_command("import_run", str(export), "--run-id", "copy")
    assert Run.objects.get(pk="copy").definitions_source == Run.DefinitionsSource.VERSION
    assert not [r for r in caplog.records if "flipped" in r.getMessage()]

    edited = demo_config()
    edited["context_variables"]["declarative_variables"][0]["value"] = "elsewhere"
    workflow_import(name="Edited", data=edited)
    header["run"]["workflow"] = "Edited"  # Generator's definitions under Edited's name
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(json.dumps(header) + "\n")
    with pytest.raises(CommandError, match=r"line 1: run\.definitions: are version 1 of workflow "
                                           r"'Generator' .*but the run is for workflow 'Edited'"):
        call_command("import_run", str(wrong), "--run-id", "wrong")
    assert not Run.objects.filter(pk="wrong").exists()

    header["run"]["definitions"] = edited  # Edited's own, no longer a version here
    header["run"]["definitions"]["context_variables"]["declarative_variables"][0]["value"] = "x"
    header["run"]["workflow_version"] = None
    unpublished = tmp_path / "unpublished.jsonl"
    unpublished.write_text(json.dumps(header) + "\n")
    call_command("import_run", str(unpublished), "--run-id", "unpublished")
    assert Run.objects.get(pk="unpublished").definitions_source == Run.DefinitionsSource.RUNTIME
