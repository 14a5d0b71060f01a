"""The run page's warnings endpoint through the Django test client: every warning of the run,
newest first, with ``total`` the count the page's header shows; staff only; JSON errors."""

from __future__ import annotations

import pytest

from contextadmin.services import workflow_import
from runs.selectors import run_warnings
from runs.services import ingest, lifecycle
from tests.support.demo import demo_config

pytestmark = pytest.mark.django_db

WARNING = {"type": "warning", "name": "max_items", "value": 40, "tool": "tune_limits",
           "rule": "constant", "text": "declarative variable max_items is a constant"}


@pytest.fixture
def warned(db):
    """A run of 30 events, every third a warning by InterviewAgent (10 warnings)."""
    workflow_import(name="Generator", data=demo_config())
    started = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme")
    events = [
        {**WARNING, "agent": "InterviewAgent"} if seq % 3 == 0
        else {"type": "agent_text", "agent": "user", "text": f"msg {seq}"}
        for seq in range(1, 31)
    ]
    ingest.event_ingest(run_id=started.run.pk, events=events)
    started.run.refresh_from_db()
    return started.run


def test_warnings_lists_every_warning_newest_first_with_the_headers_count(staff, warned):
    answer = staff.get(f"/api/runs/{warned.pk}/warnings/").json()
    assert answer["total"] == 10
    assert [row["seq"] for row in answer["warnings"]] == list(range(30, 0, -3))
    newest = answer["warnings"][0]
    assert (newest["seq"], newest["agent"]) == (30, "InterviewAgent")
    assert {**WARNING, "agent": "InterviewAgent"}.items() <= newest["event"].items()
    header = staff.get(f"/runs/{warned.pk}/").context["page"]
    assert answer["total"] == header["warning_count"]
    assert answer["limit"] == header["warnings_shown"]


def test_warnings_are_the_latest_limit_and_the_total_counts_them_all(warned):
    answer = run_warnings(run=warned, limit=4)
    assert answer["total"] == 10
    assert [row["seq"] for row in answer["warnings"]] == [30, 27, 24, 21]


def test_warnings_is_staff_only_json_and_404s_for_an_unknown_run(client, staff, warned):
    assert staff.get("/api/runs/no-such-run/warnings/").status_code == 404
    assert staff.post(f"/api/runs/{warned.pk}/warnings/").status_code == 405
    client.logout()
    anonymous = client.get(f"/api/runs/{warned.pk}/warnings/")
    assert anonymous.status_code in (401, 403)
    assert "error" in anonymous.json()
