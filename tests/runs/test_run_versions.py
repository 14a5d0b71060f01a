"""Runs know their version (issue 16, item 4): pinned at start, shown on the run page with an
"outdated" badge, listed per version on the workflow page; a pipeline's poll gets 304 until
a new version is published."""

from __future__ import annotations

from typing import Any

import pytest
from contextadmin_sdk.engine.conditions import NEVER_IN_PRODUCTION
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextadmin import recent_runs
from contextadmin.impact import run_source
from contextadmin.models import Workflow
from contextadmin.services import workflow_import, workflow_version_approve
from runs import selectors
from runs.models import Run
from runs.services.lifecycle import run_start
from tests.runs.conftest import Api, demo_config

pytestmark = pytest.mark.django_db


def publish(*, max_items: int, user: Any = None) -> None:
    """Record a new version of Generator (published at once unless review is on)."""
    config = demo_config()
    config["context_variables"]["declarative_variables"][1]["value"] = max_items
    workflow_import(name="Generator", data=config, replace=True, user=user)


@pytest.fixture
def staff_client(db: None) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("ana", "a@example.com", "pw"))
    return client


def test_a_run_stores_the_version_it_pinned_and_the_api_says_which(
    api: Api, generator: Workflow
) -> None:
    started = api.start()
    assert started["state"]["workflow_version"] == 1
    publish(max_items=30)
    later = api.start()
    assert later["state"]["workflow_version"] == 2
    first = Run.objects.get(pk=started["run_id"])
    assert first.workflow_version == 1  # a later publish does not move a started run
    state = api.get(f"/api/runs/{first.pk}/state/").json()
    assert state["workflow_version"] == 1
    assert selectors.run_summary(run=first)["workflow_version"] == 1
    assert selectors.run_published_version(run=first) == 2


def test_with_review_on_a_run_pins_the_published_version_not_the_draft(
    settings: Any, api: Api, generator: Workflow
) -> None:
    settings.CONTEXTADMIN_REVIEW = "on"
    publish(max_items=30)  # version 2, a draft
    run = Run.objects.get(pk=api.start()["run_id"])
    assert run.workflow_version == 1
    assert run.definitions["context_variables"]["declarative_variables"][1]["value"] == 25


def test_the_run_page_links_its_version_and_says_when_it_is_outdated(
    staff_client: Client, generator: Workflow
) -> None:
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    page = staff_client.get(reverse("runs-detail", args=[run.pk])).content.decode()
    history = reverse("admin:contextadmin_workflow_history", args=[generator.pk])
    assert f'<a href="{history}?to=1" id="run-version-link"' in page
    assert ">version 1</a>" in page
    assert "outdated" not in page

    publish(max_items=30)
    page = staff_client.get(reverse("runs-detail", args=[run.pk])).content.decode()
    assert ">version 1</a>" in page
    assert 'id="run-outdated"' in page
    assert "outdated: ran version 1, version 2 is published" in page
    # the link leads to that version in History (its diff against the one before)
    assert staff_client.get(f"{history}?to=1").status_code == 200


def test_the_run_version_endpoint_answers_staff_only(
    staff_client: Client, client: Client, generator: Workflow
) -> None:
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    url = reverse("runs-version", args=[run.pk])
    assert staff_client.get(url).json() == {
        "number": 1,
        "url": reverse("admin:contextadmin_workflow_history", args=[generator.pk]) + "?to=1",
        "published": 1,
        "outdated": False,
        "outdated_text": "",
        "not_published_here": False,
        "edited_from": None,
    }
    publish(max_items=30)
    assert staff_client.get(url).json()["outdated"] is True
    assert staff_client.get(url).json()["outdated_text"] == (
        "outdated: ran version 1, version 2 is published"
    )
    assert staff_client.get(url).json()["published"] == 2
    assert client.get(url).status_code == 401
    missing = staff_client.get(reverse("runs-version", args=["nope"]))
    assert missing.status_code == 404 and missing.json()["error"].startswith("run_id:")


def test_an_unversioned_run_says_so(staff_client: Client, generator: Workflow) -> None:
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    Run.objects.filter(pk=run.pk).update(workflow_version=None)
    page = staff_client.get(reverse("runs-detail", args=[run.pk])).content.decode()
    assert "unversioned" in page and "run-version-link" not in page


def test_the_workflow_page_lists_recent_runs_per_version(
    staff_client: Client, generator: Workflow
) -> None:
    old = [run_start(workflow_name="Generator", enterprise_id=f"e{i}").run for i in range(7)]
    publish(max_items=30)
    new = run_start(workflow_name="Generator", enterprise_id="new").run
    grouped = recent_runs.runs_by_version(workflow_name="Generator", per_version=5)
    assert grouped is not None
    assert [(g.version, g.count) for g in grouped.versions] == [(2, 1), (1, 7)]
    assert [r.run_id for r in grouped.versions[0].runs] == [new.pk]
    # the newest five of version 1, newest first
    assert [r.run_id for r in grouped.versions[1].runs] == [r.pk for r in old[::-1][:5]]
    assert grouped.versions[1].runs[0].url == reverse("runs-detail", args=[old[-1].pk])

    page = staff_client.get(
        reverse("admin:contextadmin_workflow_change", args=[generator.pk])
    ).content.decode()
    assert 'id="runs-by-version"' in page
    assert 'id="runs-version-2"' in page and 'id="runs-version-1"' in page
    assert reverse("runs-detail", args=[new.pk]) in page
    assert reverse("runs-detail", args=[old[0].pk]) not in page  # 6th newest of version 1
    assert "/runs/?workflow=Generator" in page


def test_runs_per_version_take_two_queries_whatever_the_number_of_runs(
    generator: Workflow,
) -> None:
    for i in range(3):
        run_start(workflow_name="Generator", enterprise_id=f"a{i}")
    with CaptureQueriesContext(connection) as few:
        recent_runs.runs_by_version(workflow_name="Generator")
    for version in range(4):
        publish(max_items=30 + version)
        for i in range(6):
            run_start(workflow_name="Generator", enterprise_id=f"b{version}{i}")
    with CaptureQueriesContext(connection) as many:
        grouped = recent_runs.runs_by_version(workflow_name="Generator", versions=3)
    assert len(few) == len(many) == 2
    assert grouped is not None and [g.version for g in grouped.versions] == [5, 4, 3]


def test_a_workflow_without_runs_says_so(staff_client: Client, generator: Workflow) -> None:
    page = staff_client.get(
        reverse("admin:contextadmin_workflow_change", args=[generator.pk])
    ).content.decode()
    assert 'id="runs-by-version"' in page and "No runs yet." in page


def test_impact_replays_know_the_version_each_run_pinned(generator: Workflow) -> None:
    run_start(workflow_name="Generator", enterprise_id="acme")
    publish(max_items=30)
    run_start(workflow_name="Generator", enterprise_id="acme")
    source = run_source()
    assert source is not None
    versions = [recorded.version for recorded, _ in source(workflow_name="Generator", limit=10)]
    assert versions == [2, 1]


# -- a deployment pipeline's poll (docs/deploy.md) ---------------------------------------------
def test_a_pipeline_poll_is_304_until_a_new_version_is_published_then_200_with_it(
    settings: Any, api: Api, generator: Workflow
) -> None:
    settings.CONTEXTADMIN_REVIEW = "on"
    url = "/api/workflows/Generator/context_variables.json?environment=production"
    first = api.get(url)
    assert first.status_code == 200 and first["X-Context-Version"] == "1"
    etag = first["ETag"]

    author, reviewer = (
        get_user_model().objects.create_user(name, password="pw", is_staff=True)
        for name in ("ana", "rui")
    )
    publish(max_items=30, user=author)  # version 2: a draft
    polled = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert polled.status_code == 304 and polled.content == b"" and polled["ETag"] == etag
    draft = api.get(url.replace("?", "?version=draft&"))
    assert draft["X-Context-Version"] == "2" and draft["X-Context-Version-Status"] == "draft"

    workflow_version_approve(workflow=generator, number=2, user=reviewer)
    published = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert published.status_code == 200
    assert published["X-Context-Version"] == "2"
    assert published["X-Context-Version-Status"] == "published"
    assert published["ETag"] != etag
    assert b'"value": 30' in published.content
    again = api.get(url, HTTP_IF_NONE_MATCH=published["ETag"])
    assert again.status_code == 304


# -- "never in production" on production runs (issue 16, item 6) -------------------------------
def test_a_production_run_reports_environment_gated_hand_offs_as_never_end_to_end(
    api: Api, generator: Workflow
) -> None:
    """Start, snapshot, every event and the state API all say "never" for a rule that names
    an environment variable; the page only displays it ("never in this environment", with
    the reason "never in production": tests/inspector/test_browser.py)."""
    config = demo_config()
    config["handoffs"] = [
        {
            "source_agent": "InterviewAgent",
            "target_agent": "HandoffsAgent",
            "condition": "${context_aware}",
            "description": "",
        },
        {
            "source_agent": "InterviewAgent",
            "target_agent": "ContextVariablesAgent",
            "condition": "${interview_complete}",
            "description": "",
        },
    ]
    workflow_import(name="Generator", data=config, replace=True)
    production = api.start(environment="production")
    development = api.start(environment="development")

    def statuses(run_id: str) -> list[tuple[str, str | None]]:
        state = api.get(f"/api/runs/{run_id}/state/").json()
        return [(rule["status"], rule["reason"]) for rule in state["handoffs"]]

    assert [r["status"] for r in production["state"]["handoffs"]] == ["never", "not yet"]
    assert statuses(production["run_id"]) == [("never", NEVER_IN_PRODUCTION), ("not yet", None)]
    assert "never in production" in NEVER_IN_PRODUCTION
    response = api.events(
        production["run_id"], [{"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"}]
    )
    assert response.status_code == 200
    assert statuses(production["run_id"]) == [("never", NEVER_IN_PRODUCTION), ("holds", None)]
    snapshot = selectors.run_snapshot(run_id=production["run_id"], after=None)
    assert [rule["status"] for rule in snapshot["handoffs"]] == ["never", "holds"]
    # the same rules in development are only "not yet"
    assert [status for status, _ in statuses(development["run_id"])] == ["not yet", "not yet"]
