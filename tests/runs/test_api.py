"""The runtime HTTP API (docs/api.md) through Django's test client."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from contextadmin_sdk.engine import JSON_MAX_DEPTH
from django.core.management import CommandError, call_command
from django.test import Client

from runs.models import ApiToken, Flip, Run, RunEvent
from tests.runs.conftest import Api
from tests.support.demo import demo_events

pytestmark = pytest.mark.django_db


def log_of(run_id: str) -> list[tuple[int, str]]:
    return list(RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "type"))


def test_start_builds_the_context_with_the_engine(api: Api):
    answer = api.start()
    state = answer["state"]
    assert state["seq"] == 0
    context = state["state"]["context"]
    assert context["enterprise_id"] == "acme"
    assert context["workflow_name"] == "Generator"
    assert context["product_tier"] == "beta"
    assert context["max_items"] == 25
    assert context["interview_complete"] is False
    assert state["provenance"]["concept_overview"]["status"] == "unresolved"
    assert state["state"]["execution"]["status"] == "running"
    run = Run.objects.get(pk=answer["run_id"])
    assert (
        run.definitions["context_variables"]["derived_variables"][0]["name"] == "interview_complete"
    )
    assert len(run.definitions_hash) == 64


def test_start_with_a_supplied_context_keeps_it_and_seeds_derived_defaults(api: Api):
    answer = api.start(context={"concept_overview": "gold", "custom": 1})
    context = answer["state"]["state"]["context"]
    assert context["concept_overview"] == "gold"
    assert context["custom"] == 1
    assert context["interview_complete"] is False
    assert context["product_tier"] == "beta"  # a declarative constant, filled in when left out
    # named where the runtime read it, as the preview page names it, not "runtime"
    assert answer["state"]["provenance"]["concept_overview"]["source"] == (
        "db.autogen_ai_agents.Concepts.ConceptOverview"
    )
    assert answer["state"]["provenance"]["custom"]["source"] == "runtime"


def test_start_refuses_a_supplied_context_that_breaks_the_rules(api: Api):
    response = api.post(
        "/api/runs/",
        {"workflow": "Generator", "enterprise_id": "acme", "context": {"product_tier": "gold"}},
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("context.product_tier: ")


def test_start_pins_definitions_against_later_edits(api: Api, generator):
    run_id = api.start()["run_id"]
    generator.variables.filter(name="interview_complete").delete()
    response = api.events(
        run_id, [{"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"}]
    )
    assert response.status_code == 200
    assert [f["name"] for f in response.json()["flips"]] == ["interview_complete"]


def test_production_start_suppresses_environment_variables_visibly(api: Api):
    state = api.start(environment="production")["state"]
    assert "context_aware" not in state["state"]["context"]
    assert state["provenance"]["context_aware"]["status"] == "suppressed"


def test_retried_start_with_the_same_run_id_is_idempotent(api: Api):
    first = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", "run_id": "r1"}
    )
    again = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", "run_id": "r1"}
    )
    other = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "globex", "run_id": "r1"}
    )
    assert (first.status_code, again.status_code, other.status_code) == (201, 200, 409)
    assert Run.objects.count() == 1
    assert "run_id" in other.json()["error"]


def test_the_scripted_run_flips_interview_complete_at_its_event(api: Api):
    run_id = api.start()["run_id"]
    response = api.events(run_id, demo_events())
    assert response.status_code == 200
    body = response.json()
    assert body["last_seq"] == 8
    assert [(f["name"], f["value"], f["seq"]) for f in body["flips"]] == [
        ("interview_complete", True, 5)
    ]
    assert Flip.objects.get(run_id=run_id).cause["agent"] == "InterviewAgent"
    state = api.get(f"/api/runs/{run_id}/state/").json()
    assert state["seq"] == 8
    assert state["state"]["context"]["interview_complete"] is True
    assert state["state"]["nodes"]["save_context_plan"] == {"saved": 6}
    assert state["state"]["execution"]["turn_counts"]["InterviewAgent"] == 3


def test_events_without_seq_get_the_next_ones(api: Api):
    run_id = api.start()["run_id"]
    api.events(run_id, [{"type": "agent_text", "agent": "a", "text": "x"}])
    body = api.events(run_id, [{"type": "agent_text", "agent": "a", "text": "y"}] * 2).json()
    assert body["last_seq"] == 3
    assert log_of(run_id) == [(1, "agent_text"), (2, "agent_text"), (3, "agent_text")]


def test_a_retried_batch_is_acknowledged_again_and_stored_once(api: Api):
    run_id = api.start()["run_id"]
    batch = [{**event, "seq": seq} for seq, event in enumerate(demo_events(), 1)]
    first = api.events(run_id, batch[:6]).json()
    again = api.events(run_id, batch[:6]).json()
    overlapping = api.events(run_id, batch[4:]).json()
    assert first["last_seq"] == again["last_seq"] == 6
    assert again["flips"] == []  # nothing new flipped...
    assert [a["seq"] for a in again["acks"]] == [1, 2, 3, 4, 5, 6]  # ...but every seq is acked
    assert again["acks"][4]["flips"][0]["name"] == "interview_complete"  # with its original flips
    assert overlapping["last_seq"] == 8
    assert [s for s, _ in log_of(run_id)] == list(range(1, 9))
    assert Flip.objects.filter(run_id=run_id).count() == 1


@pytest.mark.parametrize(
    ("batch", "expected_seq", "fragment"),
    [
        pytest.param(
            [{"type": "agent_text", "agent": "a", "text": "DIFFERENT", "seq": 1}],
            3,
            "different payload",
            id="conflicting-retry",
        ),
        pytest.param(
            [{"type": "agent_text", "agent": "a", "text": "x", "seq": 5}], 3, "gap", id="gap"
        ),
        pytest.param(
            [
                {"type": "agent_text", "agent": "a", "text": "x", "seq": 3},
                {"type": "agent_text", "agent": "a", "text": "x", "seq": 5},
            ],
            4,
            "gap",
            id="gap-inside-batch",
        ),
    ],
)
def test_conflicts_and_gaps_are_409_with_the_expected_seq_and_store_nothing(
    api: Api, batch, expected_seq, fragment
):
    run_id = api.start()["run_id"]
    api.events(
        run_id,
        [
            {"type": "agent_text", "agent": "a", "text": "x", "seq": 1},
            {"type": "agent_text", "agent": "a", "text": "x", "seq": 2},
        ],
    )
    response = api.events(run_id, batch)
    assert response.status_code == 409
    assert response.json()["expected_seq"] == expected_seq
    assert fragment in response.json()["error"]
    assert [s for s, _ in log_of(run_id)] == [1, 2]


def test_state_at_any_seq_and_bad_at(api: Api):
    run_id = api.start()["run_id"]
    api.events(run_id, demo_events())
    at4 = api.get(f"/api/runs/{run_id}/state/?at=4").json()
    at5 = api.get(f"/api/runs/{run_id}/state/?at=5").json()
    assert (at4["seq"], at4["state"]["context"]["interview_complete"]) == (4, False)
    assert (at5["seq"], at5["state"]["context"]["interview_complete"]) == (5, True)
    assert [f["seq"] for f in at4["flips"]] == [] and [f["seq"] for f in at5["flips"]] == [5]
    for bad in ("-1", "x", "9", "1.5"):
        response = api.get(f"/api/runs/{run_id}/state/?at={bad}")
        assert response.status_code == 400, bad
        assert response.json()["error"].startswith("at:")


def test_run_status_events_end_the_run(api: Api):
    run_id = api.start()["run_id"]
    api.events(run_id, [{"type": "run_status", "status": "completed"}])
    run = Run.objects.get(pk=run_id)
    assert run.status == "completed"
    assert run.ended_at is not None


# -- authorization ---------------------------------------------------------------------------
def test_requests_without_a_valid_token_are_refused(client, generator, token_secret):
    from runs.tokens import api_token_create, api_token_revoke

    body = {"workflow": "Generator", "enterprise_id": "acme"}
    assert Api(client, None).post("/api/runs/", body).status_code == 401
    assert Api(client, "ca_00000000_" + "x" * 43).post("/api/runs/", body).status_code == 401
    assert Api(client, "garbage").post("/api/runs/", body).status_code == 401
    token, secret = api_token_create(name="to-revoke")
    assert Api(client, secret).post("/api/runs/", body).status_code == 201
    api_token_revoke(token=token)
    response = Api(client, secret).post("/api/runs/", body)
    assert response.status_code == 401
    assert "Authorization" in response.json()["error"]


def test_a_token_scoped_to_another_workflow_gets_403_or_404(client, generator, api: Api):
    from contextadmin.models import Workflow
    from runs.tokens import api_token_create

    other = Workflow.objects.create(name="Other")
    _, scoped = api_token_create(name="scoped", workflow=other)
    run_id = api.start()["run_id"]
    scoped_api = Api(client, scoped)
    assert (
        scoped_api.post("/api/runs/", {"workflow": "Generator", "enterprise_id": "a"}).status_code
        == 403
    )
    # a run of another workflow reads as an unknown run (tests/security/test_foreign_runs.py)
    assert (
        scoped_api.events(run_id, [{"type": "run_status", "status": "failed"}]).status_code == 404
    )
    assert scoped_api.get(f"/api/runs/{run_id}/state/").status_code == 404
    assert RunEvent.objects.count() == 0


def test_tokens_are_stored_hashed(token_secret):
    stored = ApiToken.objects.get(name="runtime")
    assert token_secret not in (stored.secret_hash, stored.prefix)
    assert len(stored.secret_hash) == 64


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "name: required"),
        ("   ", "name: required"),
        ("x" * 101, "name: at most 100 characters (got 101)"),
        ("host\x00a", "name: letters, digits, spaces and punctuation only"),
        ("host\nsecond line", "name: letters, digits, spaces and punctuation only"),
    ],
    ids=["empty", "blank", "too-long", "nul", "newline"],
)
def test_create_api_token_refuses_a_name_the_column_cannot_hold_and_creates_nothing(
    db, name: str, message: str
) -> None:
    """A 500-character name was stored by SQLite (PostgreSQL would raise), past max_length."""
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("create_api_token", name, stdout=io.StringIO(), stderr=io.StringIO())
    assert not ApiToken.objects.exists()


def test_state_reads_need_staff_or_a_token(client, api: Api, django_user_model):
    run_id = api.start()["run_id"]
    path = f"/api/runs/{run_id}/state/"
    assert client.get(path).status_code == 401
    client.force_login(django_user_model.objects.create_user("viewer", password="pw-12345678"))
    assert client.get(path).status_code == 403
    client.force_login(
        django_user_model.objects.create_user("staff", password="pw-12345678", is_staff=True)
    )
    assert client.get(path).status_code == 200


# -- bad input: a clear 4xx naming the field, nothing stored -----------------------------------
BAD_STARTS = [
    pytest.param(b"{", 400, "body", id="invalid-json"),
    pytest.param(b"[]", 400, "body", id="not-an-object"),
    pytest.param({"enterprise_id": "a"}, 400, "workflow", id="no-workflow"),
    pytest.param({"workflow": "Generator"}, 400, "enterprise_id", id="no-enterprise"),
    pytest.param(
        {"workflow": "Generator", "enterprise_id": 5},
        400,
        "enterprise_id",
        id="enterprise-not-string",
    ),
    pytest.param(
        {"workflow": "Nope", "enterprise_id": "a"}, 404, "workflow", id="unknown-workflow"
    ),
    pytest.param(
        {"workflow": "Generator", "enterprise_id": "a", "environment": "staging"},
        400,
        "environment",
        id="bad-environment",
    ),
    pytest.param(
        {"workflow": "Generator", "enterprise_id": "a", "run_id": "../x"},
        400,
        "run_id",
        id="bad-run-id",
    ),
    pytest.param(
        {"workflow": "Generator", "enterprise_id": "a", "context": [1]},
        400,
        "context",
        id="context-not-object",
    ),
    pytest.param(
        {"workflow": "Generator", "enterprise_id": "a", "context": {"x": "y" * 300_000}},
        400,
        "context",
        id="context-too-big",
    ),
    pytest.param(
        {"workflow": "Generator", "enterprise_id": "a", "colour": 1},
        400,
        "colour",
        id="unknown-field",
    ),
]


@pytest.mark.parametrize(("body", "status", "field"), BAD_STARTS)
def test_bad_run_starts(api: Api, body, status, field):
    response = api.post("/api/runs/", body)
    assert response.status_code == status
    assert response.json()["error"].startswith(field)
    assert Run.objects.count() == 0


def test_a_supplied_context_nested_past_the_limit_says_how_deep_it_may_go(api: Api):
    """It said "not JSON-serializable: Recursion limit reached" (orjson's words)."""
    deep: Any = "leaf"
    for _ in range(500):
        deep = {"x": deep}
    response = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "a", "context": {"v": deep}}
    )
    assert response.status_code == 400
    assert response.json()["error"] == f"context: nested more than {JSON_MAX_DEPTH} levels"
    assert Run.objects.count() == 0


BAD_BATCHES = [
    pytest.param(b"nope", "body", id="invalid-json"),
    pytest.param({}, "events", id="no-events"),
    pytest.param({"events": {}}, "events", id="events-not-list"),
    pytest.param({"events": []}, "events", id="empty"),
    pytest.param({"events": [1]}, "events[0]", id="event-not-object"),
    pytest.param({"events": [{"agent": "a"}]}, "events[0].type", id="no-type"),
    pytest.param({"events": [{"type": "teleport"}]}, "events[0].type", id="unknown-type"),
    pytest.param(
        {"events": [{"type": "agent_text", "text": "x"}]},
        "events[0].agent",
        id="text-without-agent",
    ),
    pytest.param(
        {"events": [{"type": "agent_text", "agent": "a", "text": "x", "seq": "1"}]},
        "events[0].seq",
        id="seq-string",
    ),
    pytest.param(
        {"events": [{"type": "agent_text", "agent": "a", "text": "x", "seq": 0}]},
        "events[0].seq",
        id="seq-zero",
    ),
    pytest.param(
        {"events": [{"type": "agent_text", "agent": "a", "text": "x"}, {"type": "tool_response"}]},
        "events[1].tool",
        id="second-event-bad",
    ),
    pytest.param(
        {"events": [{"type": "context_set", "name": "nope", "value": 1}]},
        "events[0].name",
        id="context-set-unknown",
    ),
    pytest.param(
        {"events": [{"type": "agent_text", "agent": "a", "text": "x"}], "extra": 1},
        "extra",
        id="unknown-field",
    ),
    pytest.param(
        {"events": [{"type": "run_status", "status": "x"}] * 1001}, "events", id="too-many"
    ),
]


@pytest.mark.parametrize(("body", "field"), BAD_BATCHES)
def test_bad_event_batches(api: Api, body, field):
    run_id = api.start()["run_id"]
    response = api.post(f"/api/runs/{run_id}/events/", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(field), response.json()
    assert RunEvent.objects.count() == 0
    assert Run.objects.get(pk=run_id).last_seq == 0


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("GET", "/api/nope/", "path: no API endpoint at /api/nope/;"),
        ("POST", "/api/v2/runs/", "path: no API endpoint at /api/v2/runs/;"),
        ("POST", "/api/runs", "did you mean /api/runs/ (with the trailing slash)?"),
        ("GET", "/api/runs/r1/state", "did you mean /api/runs/r1/state/ (with the trailing"),
        ("GET", "/api/", "path: no API endpoint at /api/;"),
    ],
)
def test_a_path_under_api_that_is_no_endpoint_is_a_json_404_naming_it(
    db, method: str, path: str, message: str
) -> None:
    """Django answered an HTML page (its DEBUG page under scripts/run), a POST without the
    slash a 500 in DEBUG (the slash redirect cannot keep a body), and a POST the CSRF page."""
    client = Client(enforce_csrf_checks=True)
    response = client.generic(method, path, data=b"{}", content_type="application/json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert message in body["error"] and body["field"] == "path"


def test_unknown_run_is_404_and_wrong_content_type_415_and_huge_body_413(api: Api, settings):
    assert api.events("nope", [{"type": "run_status", "status": "completed"}]).status_code == 404
    assert api.get("/api/runs/nope/state/").status_code == 404
    run_id = api.start()["run_id"]
    response = api.post(
        f"/api/runs/{run_id}/events/", "events=1", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415
    huge = json.dumps(
        {
            "events": [
                {
                    "type": "agent_text",
                    "agent": "a",
                    "text": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
                }
            ]
        }
    )
    response = api.post(f"/api/runs/{run_id}/events/", huge)
    assert response.status_code == 413
    assert response.json()["error"].startswith("body")


def test_concurrent_starts_with_one_run_id_answer_as_retries(api: Api, monkeypatch):
    """Two starts race past the existence check: the loser answers like a retry, not a 500."""
    from runs.services import lifecycle

    real_pin = lifecycle.definitions_pin
    raced = []

    def pin_after_a_competing_start(*, workflow, definitions, token):
        if not raced:
            raced.append(None)  # the competing start below must not race again
            raced[0] = lifecycle.run_start(
                workflow_name="Generator", enterprise_id="acme", run_id="race"
            )
        return real_pin(workflow=workflow, definitions=definitions, token=token)

    monkeypatch.setattr(lifecycle, "definitions_pin", pin_after_a_competing_start)
    response = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", "run_id": "race"}
    )
    assert raced and raced[0].created
    assert response.status_code == 200
    assert response.json()["run_id"] == "race"
    assert Run.objects.filter(pk="race").count() == 1
    other = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "globex", "run_id": "race"}
    )
    assert other.status_code == 409


def test_a_run_pins_the_published_version_not_the_rows(api: Api, generator):
    """docs/versions.md: new runs get the published version; rows changed outside the admin
    (no new version) do not reach a run."""
    generator.variables.filter(name="interview_complete").delete()  # no version made
    state = api.start()["state"]
    assert "interview_complete" in state["state"]["context"]  # as in version 1
