"""The front page and the runs list's search and keyset pages, through the Django test client
(query counts asserted: the list costs the same on its first and its last page)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.models import DurationField, ExpressionWrapper, IntegerField, Value
from django.db.models.functions import Cast, Substr
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.demo import demo_config, demo_events

pytestmark = pytest.mark.django_db


@pytest.fixture
def generator(db):
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())


def many_runs(count: int, **fields) -> list:
    """Insert ``count`` runs directly, one second apart, newest last (no events)."""
    from runs.models import Run

    base = timezone.now() - dt.timedelta(days=1)
    runs = [
        Run(
            id=f"run{i:06d}",
            workflow_name=fields.get("workflow_name", "Generator"),
            definitions={},
            definitions_hash="x",
            enterprise_id=fields.get("enterprise_id", f"ent{i % 7}"),
            status=fields.get("status", "completed" if i % 3 else "running"),
        )
        for i in range(count)
    ]
    Run.objects.bulk_create(runs, batch_size=1000)
    # auto_now_add ignores a given value: one UPDATE sets started_at from the id's number (a
    # bulk_update of 100,000 rows builds CASE statements for 20 s).
    step = ExpressionWrapper(
        Cast(Substr("id", 4), IntegerField()) * Value(dt.timedelta(seconds=1)),
        output_field=DurationField(),
    )
    Run.objects.filter(id__startswith="run").update(started_at=Value(base) + step)
    for i, run in enumerate(runs):
        run.started_at = base + dt.timedelta(seconds=i)
    return runs


# -- the front page ------------------------------------------------------------------------------
def test_front_page_sends_anonymous_visitors_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/")


def test_front_page_shows_workflows_live_runs_changes_and_the_checklist(staff, generator):
    from runs.services import ingest, lifecycle

    started = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme")
    ingest.event_ingest(run_id=started.run.pk, events=demo_events()[:2])
    with CaptureQueriesContext(connection) as queries:
        response = staff.get("/")
    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-workflow="Generator"' in page
    assert f"/runs/{started.run.pk}/" in page  # the last run, linked
    assert "/workflows/Generator/preview/" in page and "/runs/?workflow=Generator" in page
    assert 'id="live-data"' in page and started.run.pk in page
    assert "Recent changes" in page and "Generator</strong> v1" in page  # the import's version
    assert 'id="step-token" ' not in page  # (attribute order: data-done first)
    assert 'data-done="false" id="step-token"' in page  # no token yet
    assert 'data-done="true" id="step-runtime"' in page
    # session, user, workflows (one query), live runs, changes, three checks: bounded
    assert len(queries) <= 10, [q["sql"] for q in queries]


def test_front_page_query_count_does_not_grow_with_workflows(staff, generator):
    from contextadmin.services import workflow_import

    with CaptureQueriesContext(connection) as one:
        staff.get("/")
    for name in ("Alpha", "Beta", "Gamma"):
        workflow_import(name=name, data=demo_config())
    many_runs(30)
    with CaptureQueriesContext(connection) as four:
        page = staff.get("/").content.decode()
    assert len(four) == len(one)
    assert page.count("data-workflow=") == 4


def test_front_page_hides_the_checklist_when_every_step_is_done(staff, generator):
    from runs import tokens

    tokens.api_token_create(name="rt")
    many_runs(3)
    assert 'id="checklist"' not in staff.get("/").content.decode()


# -- the runs list -------------------------------------------------------------------------------
def test_runs_list_pages_with_a_keyset_cursor_in_constant_queries(staff, generator):
    many_runs(120)
    seen: list[str] = []
    counts = []
    query = {"format": "json"}
    while True:
        with CaptureQueriesContext(connection) as queries:
            data = staff.get("/runs/", query).json()
        counts.append(len(queries))
        seen += [run["id"] for run in data["runs"]]
        if not data["next"]:
            break
        query = {"format": "json", "before": data["next"]}
    assert seen == [f"run{i:06d}" for i in reversed(range(120))]  # newest first, each once
    assert len(set(counts)) == 1, counts  # the last page costs what the first does
    runs_queries = [q["sql"] for q in queries.captured_queries if "runs_run" in q["sql"]]
    assert len(runs_queries) == 1 and "OFFSET" not in runs_queries[0].upper()
    # and back, page by page, with the Newer cursor: the same pages in reverse
    back: list[str] = []
    prev = data["prev"]
    while prev:
        with CaptureQueriesContext(connection) as queries:
            page = staff.get("/runs/", {"format": "json", "after": prev}).json()
        assert len(queries) == counts[0]
        back = [run["id"] for run in page["runs"]] + back
        prev = page["prev"]
    assert back + [run["id"] for run in data["runs"]] == seen


def test_runs_list_html_links_to_the_older_page_and_back(staff, generator):
    many_runs(60)
    page = staff.get("/runs/?workflow=Generator").content.decode()
    assert 'id="page-older"' in page and 'id="page-newest"' not in page
    older = page.split('id="page-older"')[0].rsplit('href="', 1)[1].split('"')[0]
    second = staff.get(older.replace("&amp;", "&")).content.decode()
    assert "workflow=Generator" in older
    assert 'id="page-newest"' in second and 'id="page-older"' not in second
    newer = second.split('id="page-newer"')[0].rsplit('href="', 1)[1].split('"')[0]
    again = staff.get(newer.replace("&amp;", "&")).content.decode()
    assert 'id="page-older"' in again and 'id="page-newer"' not in again  # the newest 50


@pytest.mark.parametrize("query", [{"q": "run00001"}, {"enterprise_id": "ent3"},
                                   {"status": "running"}])
def test_runs_list_searches(staff, generator, query):
    runs = many_runs(30)
    found = {r["id"] for r in staff.get("/runs/", {**query, "format": "json"}).json()["runs"]}
    if "q" in query:
        assert found == {f"run0000{i}" for i in range(10, 20)}
    elif "enterprise_id" in query:
        assert found == {r.id for r in runs if r.enterprise_id == "ent3"}
    else:
        assert found == {r.id for r in runs if r.status == "running"}


def test_runs_list_searches_a_time_range_and_a_flipped_flag(staff, generator):
    from runs.models import Run
    from runs.services import ingest, lifecycle

    runs = many_runs(10)
    since = runs[3].started_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    until = runs[6].started_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    found = [r["id"] for r in staff.get("/runs/", {"since": since, "until": until,
                                                   "format": "json"}).json()["runs"]]
    assert found == ["run000005", "run000004", "run000003"]
    flipped = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    ingest.event_ingest(run_id=flipped.pk, events=demo_events())
    lifecycle.run_start(workflow_name="Generator", enterprise_id="acme")
    flag = Run.objects.get(pk=flipped.pk).flips.filter(value=True).first().variable
    found = [r["id"] for r in staff.get("/runs/", {"flag": flag, "format": "json"}).json()["runs"]]
    assert found == [flipped.pk]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"status": "exploded"}, "status"),
        ({"environment": "moon"}, "environment"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-45"}, "until"),
        ({"since": "2026-02-30T00:00"}, "since"),  # well formed, but no such day
        ({"since": "2026-13-01T00:00"}, "since"),
        ({"until": "2026-01-01T25:00"}, "until"),
        ({"since": "2026-01-01T00:61"}, "since"),
        ({"since": "0000-01-01T00:00"}, "since"),
        ({"since": "2026-01-01T00:00+25:00"}, "since"),
        ({"until": "0001-01-01T00:00+23:00"}, "until"),  # before the first instant in UTC
        ({"before": "not-a-cursor!"}, "before"),
        ({"after": "bm9wZQ"}, "after"),
    ],
)
def test_runs_list_refuses_bad_search_naming_the_field(staff, generator, query, field):
    response = staff.get("/runs/", {**query, "format": "json"})
    assert response.status_code == 400
    assert response.json()["error"].startswith(f"{field}:")
    page = staff.get("/runs/", query)
    assert page.status_code == 400 and 'id="search-error"' in page.content.decode()


def test_runs_list_names_every_bad_search_value_at_once(staff, generator):
    """It named the first only: fix it, and meet the next."""
    query = {"status": "bogus", "environment": "moon", "since": "2026-02-30T00:00"}
    error = staff.get("/runs/", {**query, "format": "json"}).json()["error"]
    assert error.startswith("status: one of ")
    assert "; environment: one of " in error and "; since: expected a date" in error


@pytest.mark.parametrize("answer", ["xml", "JSON", "csv"])
def test_runs_list_refuses_a_format_it_does_not_answer_in(staff, generator, answer):
    """``?format=xml`` was ignored: the HTML page came back as if asked for."""
    response = staff.get("/runs/", {"format": answer})
    assert response.status_code == 400
    assert "format: json, or leave it out for the page" in response.content.decode()


def test_run_summaries_carry_the_lifecycle(staff, generator):
    from runs.services import ingest, lifecycle

    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    ingest.event_ingest(run_id=run.pk, events=[*demo_events()[:2],
                                               {"type": "run_status", "status": "failed"}])
    summary = staff.get("/runs/", {"format": "json"}).json()["runs"][0]
    assert summary["status"] == "failed" and summary["ended_by"] == "crash"
    assert summary["ended_at"] and summary["last_event_at"]


def query_plan(sql: str) -> str:
    """SQLite's plan for ``sql``: "SEARCH ... USING INDEX", "USE TEMP B-TREE FOR ORDER BY"."""
    with connection.cursor() as cursor:
        return " ".join(str(row[-1]) for row in cursor.execute(f"EXPLAIN QUERY PLAN {sql}"))


@pytest.mark.slow
@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plan")
def test_runs_list_reads_one_indexed_page_at_any_depth_of_100000_runs(staff, generator):
    """Any page, however deep and with or without a filter, is one query on runs_run that
    walks an index in order: no scan of the table and no sort of what the filter matches, so
    its cost does not grow with the runs (the speed itself is measured in bench/, not here)."""
    many_runs(100_000)
    data = staff.get("/runs/", {"format": "json"}).json()
    assert [r["id"] for r in data["runs"][:2]] == ["run099999", "run099998"]
    cursor = data["next"]
    for _ in range(5):
        cursor = staff.get("/runs/", {"format": "json", "before": cursor}).json()["next"]
    for search in ({}, {"enterprise_id": "ent2"}, {"workflow": "Generator"}):
        with CaptureQueriesContext(connection) as queries:
            page = staff.get("/runs/", {"format": "json", "before": cursor, **search})
        runs = page.json()["runs"]
        assert page.status_code == 200 and runs, search
        assert all(r["enterprise_id"] == "ent2" for r in runs) or "enterprise_id" not in search
        listed = [q["sql"] for q in queries.captured_queries if "runs_run" in q["sql"]]
        assert len(listed) == 1, search
        plan = query_plan(listed[0])
        assert "USING INDEX" in plan and "TEMP B-TREE" not in plan, (search, plan)


def test_favicon_is_served_not_404(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"


def test_run_page_links_the_download_and_the_workflows_definitions(staff, generator):
    from runs.services import lifecycle

    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    page = staff.get(f"/runs/{run.pk}/").content.decode()
    assert f'href="/api/runs/{run.pk}/events/?format=jsonl"' in page
    assert 'id="workflow-definitions"' in page and 'id="run-duration"' in page
    assert 'id="stream-nomatch"' in page


# -- paused runs are runs ------------------------------------------------------------------------
def test_a_paused_run_is_live_filterable_and_resumes_to_running(staff, generator):
    from runs.models import Run
    from runs.services import ingest, lifecycle

    paused = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    ended = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    ingest.event_ingest(run_id=paused.pk, events=[*demo_events()[:2],
                                                  {"type": "run_status", "status": "paused"}])
    ingest.event_ingest(run_id=ended.pk, events=[{"type": "run_status", "status": "completed"}])

    response = staff.get("/runs/", {"status": "paused", "format": "json"})
    assert response.status_code == 200
    [summary] = response.json()["runs"]
    assert (summary["id"], summary["status"]) == (paused.pk, "paused")
    assert summary["live"] is True and summary["ended_by"] is None and summary["ended_at"] is None
    assert 'value="paused"' in staff.get("/runs/").content.decode()  # the status filter offers it
    home = staff.get("/")
    assert [run["id"] for run in home.context["live"]] == [paused.pk]  # live now: not the ended

    ingest.event_ingest(run_id=paused.pk, events=[{"type": "run_status", "status": "running"}])
    run = Run.objects.get(pk=paused.pk)
    assert (run.status, run.ended_at) == ("running", None)
    summaries = staff.get("/runs/", {"format": "json"}).json()["runs"]
    assert {s["id"]: s["live"] for s in summaries} == {paused.pk: True, ended.pk: False}


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("mongodb://127.0.0.1:27018", "MONGODB_URI=mongodb://127.0.0.1:27018 .venv/bin/python"),
        ("", "<code id=\"demo-command\">.venv/bin/python"),  # none configured: a hint instead
        ("mongodb://app:s3cret@db.example:27017", "<code id=\"demo-command\">.venv/bin/python"),
    ],
)
def test_front_page_first_run_command_carries_the_servers_mongodb_uri(
    staff, generator, settings, uri, shown
):
    """Issue 22 item 3: the checklist's demo command printed no MONGODB_URI, so the demo run
    started with concept_overview unresolved; a URI with a password is never shown."""
    settings.MONGODB_URI = uri
    page = staff.get("/").content.decode()
    command = page.split('id="step-runtime"', 1)[1].split("</li>", 1)[0]
    assert shown in command
    assert "manage.py demo_ag2 --url http://testserver" in command
    assert "s3cret" not in page
    if not uri or "@" in uri:
        assert "<code>concept_overview</code> stays unresolved" in command
