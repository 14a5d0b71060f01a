"""Seed 004 over the API: a tool_response applies the workflow's output mappings; the stored
event says what was written (or why not), and the state API shows agent/world at any seq."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextadmin.services import workflow_import
from runs import selectors
from runs.models import RunEvent
from tests.runs.conftest import Api, demo_config

pytestmark = pytest.mark.django_db

KEYWORDS = {"tool": "extract_keywords", "field": "keywords", "to": "agent.intermediate.keywords"}
LANG = {"tool": "extract_keywords", "field": "lang", "to": "world.user.lang"}


@pytest.fixture
def research(generator: Any) -> None:
    workflow_import(name="Research", data={**demo_config(), "outputs": [KEYWORDS, LANG]})


def start(api: Api) -> str:
    run_id: str = api.start(workflow="Research")["run_id"]
    return run_id


def state_at(api: Api, run_id: str, at: int | None = None) -> dict[str, Any]:
    query = "" if at is None else f"?at={at}"
    response = api.get(f"/api/runs/{run_id}/state/{query}")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def test_a_tool_response_applies_the_mapping_and_the_state_api_shows_it_at_that_seq(
    api: Api, research: None
) -> None:
    run_id = start(api)
    assert state_at(api, run_id)["state"]["agent"] == {}
    events = [
        {"type": "agent_text", "agent": "InterviewAgent", "text": "find the X report"},
        {"type": "tool_response", "tool": "extract_keywords", "status": "success",
         "data": {"keywords": ["project X", "last 7 days"]}},
        {"type": "tool_response", "tool": "extract_keywords", "status": "success",
         "data": {"keywords": ["project Y"], "lang": "de"}},
    ]
    assert api.events(run_id, events[:2]).status_code == 200
    assert api.events(run_id, events[2:]).status_code == 200

    stored = RunEvent.objects.get(run_id=run_id, seq=2).result
    assert stored["outputs"] == [
        {**KEYWORDS, "written": True, "old": None, "new": ["project X", "last 7 days"]},
        {**LANG, "written": False,
         "reason": "data.lang: absent from the response, world.user.lang not written"},
    ]
    assert "outputs" not in RunEvent.objects.get(run_id=run_id, seq=1).result

    at_2 = state_at(api, run_id, 2)
    assert at_2["state"]["agent"] == {"intermediate": {"keywords": ["project X", "last 7 days"]}}
    assert at_2["state"]["world"] == {}
    assert at_2["writes"] == {
        KEYWORDS["to"]: {"tool": "extract_keywords", "field": "keywords", "seq": 2}
    }
    latest = state_at(api, run_id)
    assert latest["state"]["agent"]["intermediate"]["keywords"] == ["project Y"]
    assert latest["state"]["world"] == {"user": {"lang": "de"}}
    assert latest["writes"][KEYWORDS["to"]]["seq"] == 3
    assert state_at(api, run_id, 1)["state"]["agent"] == {}


def test_the_inspector_messages_carry_the_writes(api: Api, research: None) -> None:
    run_id = start(api)
    api.events(run_id, [{"type": "tool_response", "tool": "extract_keywords",
                         "data": {"keywords": ["k"]}}])
    [(seq, text)] = selectors.run_event_messages(run_id=run_id, after=0)
    message = json.loads(text)
    assert seq == 1
    assert message["outputs"][0]["to"] == KEYWORDS["to"]
    assert message["outputs"][0]["new"] == ["k"]
    snapshot = selectors.run_snapshot(run_id=run_id, after=None)
    assert snapshot["state"]["agent"] == {"intermediate": {"keywords": ["k"]}}
    assert snapshot["writes"][KEYWORDS["to"]]["tool"] == "extract_keywords"


def test_the_run_page_template_preview_reads_the_namespaces(
    admin_client: Any, api: Api, research: None
) -> None:
    run_id = start(api)
    api.events(run_id, [{"type": "tool_response", "tool": "extract_keywords",
                         "data": {"keywords": ["k"]}}])
    template = "Search {{agent.intermediate.keywords}} in {{world.user.lang}}"
    response = admin_client.get(f"/api/runs/{run_id}/resolve/", {"template": template})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["text"] == 'Search ["k"] in {{world.user.lang}}'
    assert body["unresolved"] == ["world.user.lang"]
    response = admin_client.get(f"/api/runs/{run_id}/resolve/", {"template": template, "at": "0"})
    assert response.json()["unresolved"] == ["agent.intermediate.keywords", "world.user.lang"]


def test_runs_of_a_workflow_without_mappings_are_unchanged(api: Api) -> None:
    run_id: str = api.start()["run_id"]
    api.events(run_id, [{"type": "tool_response", "tool": "save_plan", "data": {"keywords": 1}}])
    assert "outputs" not in RunEvent.objects.get(run_id=run_id, seq=1).result
    assert state_at(api, run_id)["state"]["agent"] == {}


def test_the_run_page_has_the_agent_and_world_panel_only_with_mappings(
    admin_client: Any, api: Api, research: None
) -> None:
    mapped = start(api)
    html = admin_client.get(f"/runs/{mapped}/").content.decode()
    assert 'id="namespaces"' in html and "Agent and world" in html
    assert '"outputs": [{"tool": "extract_keywords"' in html  # the pinned mappings, for the page
    plain: str = api.start()["run_id"]
    html = admin_client.get(f"/runs/{plain}/").content.decode()
    assert 'id="namespaces"' not in html
