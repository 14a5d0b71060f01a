"""The front page's re-read (``/?format=json``): what home.js replaces its live parts with after
a reconnect and every 30 s, so a runs-list message lost on the way cannot leave an ended run
listed as live."""

from __future__ import annotations

import pytest

from contextadmin.services import workflow_import
from runs.services import ingest, lifecycle
from tests.support.demo import demo_config, demo_events

pytestmark = pytest.mark.django_db


def test_the_front_page_answers_its_live_parts_as_json(staff):
    workflow_import(name="Generator", data=demo_config())
    ended = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    ingest.event_ingest(run_id=ended.pk, events=[{"type": "run_status", "status": "completed"}])
    running = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    ingest.event_ingest(run_id=running.pk, events=demo_events()[:2])

    response = staff.get("/", {"format": "json"})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    data = response.json()
    assert [run["id"] for run in data["live"]] == [running.pk]  # the ended one is not live
    assert data["live"][0]["event_count"] == 2 and data["live"][0]["last_event_at"]
    assert (data["live_meta"]["total"], data["live_meta"]["shown"]) == (1, 20)
    assert data["live_meta"]["now"]  # the server's clock, which the page reads stale on
    [last] = data["last_runs"]
    assert (last["workflow"], last["id"], last["status"]) == ("Generator", running.pk, "running")


def test_the_front_pages_json_is_for_staff_only(client):
    response = client.get("/", {"format": "json"})
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
