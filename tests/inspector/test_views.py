"""The inspector's views through the Django test client: auth, status codes, JSON errors."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from django.test import override_settings

from tests.support.demo import demo_config, demo_events

pytestmark = pytest.mark.django_db


@pytest.fixture
def generator(db):
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())


@pytest.fixture
def run(generator):
    from runs.services import ingest, lifecycle

    started = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme")
    ingest.event_ingest(run_id=started.run.pk, events=demo_events())
    started.run.refresh_from_db()
    return started.run


@pytest.fixture
def member(client, django_user_model):
    user = django_user_model.objects.create_user("member", password="pw-12345678")
    client.force_login(user)
    return client


def resolve_url(run, **params) -> str:
    return f"/api/runs/{run.pk}/resolve/?{urllib.parse.urlencode(params)}"


# -- pages -----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/runs/", "/runs/abc/", "/workflows/Generator/preview/"])
def test_pages_redirect_anonymous_users_to_the_admin_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=")


def test_pages_redirect_users_who_are_not_staff(member):
    response = member.get("/runs/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_runs_list_renders_runs_and_filters_server_side(staff, run):
    response = staff.get("/runs/")
    assert response.status_code == 200
    assert run.pk in response.content.decode()
    assert 'data-ws-path="/ws/runs/"' in response.content.decode()
    assert staff.get("/runs/?format=json").json()["runs"][0]["id"] == run.pk
    assert staff.get("/runs/?format=json&workflow=Other").json()["runs"] == []
    assert staff.get("/runs/?format=json&environment=production").json()["runs"] == []
    running = staff.get("/runs/?format=json&enterprise_id=acme&status=running").json()["runs"]
    assert len(running) == 1


def test_runs_list_refuses_other_methods(staff):
    assert staff.post("/runs/").status_code == 405


def test_run_page_renders_its_data_and_404s_for_an_unknown_run(staff, run):
    response = staff.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    page = response.context["page"]
    assert page["run"]["event_count"] == 8
    assert page["variables"]["interview_complete"] == {
        "category": "derived", "type": "boolean", "default": False,
        "description": page["variables"]["interview_complete"]["description"],
    }
    html = response.content.decode()
    assert f'data-state-url="/api/runs/{run.pk}/state/"' in html
    assert f'data-resolve-url="/api/runs/{run.pk}/resolve/"' in html
    assert 'id="page-data"' in html
    assert staff.get("/runs/no-such-run/").status_code == 404


def test_run_admin_links_to_the_inspector(client, django_user_model, run):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-12345678")
    client.force_login(admin)
    changelist = client.get("/admin/runs/run/").content.decode()
    assert f'href="/runs/{run.pk}/"' in changelist
    change = client.get(f"/admin/runs/run/{run.pk}/change/").content.decode()
    assert "Open in inspector" in change


# -- the resolve endpoint ----------------------------------------------------------------------
def test_resolve_fills_references_from_the_state_and_lists_the_unresolved(staff, run):
    data = staff.get(resolve_url(run, template="{{enterprise_id}} {{interview_complete}} {{x.y}}"))
    assert data.status_code == 200
    assert data.json() == {
        "seq": 8, "syntax": "ref", "text": "acme true {{x.y}}", "unresolved": ["x.y"],
    }


def test_resolve_reads_node_outputs_and_earlier_seqs(staff, run):
    data = staff.get(resolve_url(run, template="{{InterviewAgent.text}}|{{interview_complete}}",
                                 at="3")).json()
    assert data["seq"] == 3
    assert data["text"] == "Who pays, the translators or the publishers?|false"


def test_resolve_system_messages(staff, run):
    data = staff.get(resolve_url(run, template="Tier {product_tier} {missing} {{x}}",
                                 syntax="system")).json()
    assert data == {"seq": 8, "syntax": "system", "text": "Tier beta {missing} {x}",
                    "unresolved": ["missing"]}
    auto = staff.get(resolve_url(run, template="for {enterprise_id}")).json()
    assert auto["syntax"] == "system" and auto["text"] == "for acme"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "template"),
        ({"template": "x" * 4001}, "template"),
        ({"template": "x", "at": "-1"}, "at"),
        ({"template": "x", "at": "abc"}, "at"),
        ({"template": "x", "at": "99"}, "at"),
        ({"template": "x", "syntax": "jinja"}, "syntax"),
    ],
)
def test_resolve_rejects_bad_query_params_naming_the_field(staff, run, params, field):
    response = staff.get(resolve_url(run, **params))
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"].startswith(f"{field}:")


def test_resolve_is_staff_only_json(member, run):
    from django.test import Client

    anonymous = Client().get(resolve_url(run, template="x"))
    assert anonymous.status_code == 401 and "error" in anonymous.json()
    member_response = member.get(resolve_url(run, template="x"))
    assert member_response.status_code == 403 and "error" in member_response.json()


def test_resolve_unknown_run_and_wrong_method(staff, run):
    missing = staff.get("/api/runs/nope/resolve/?template=x")
    assert missing.status_code == 404 and missing.json()["error"].startswith("run_id:")
    assert staff.post(resolve_url(run, template="x")).status_code == 405


def test_resolve_ignores_bearer_tokens_without_a_staff_session(client, run):
    from runs.tokens import api_token_create

    _, secret = api_token_create(name="rt")
    response = client.get(resolve_url(run, template="x"), HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 401


# -- the workflow preview ------------------------------------------------------------------------
@override_settings(MONGODB_URI="mongodb://127.0.0.1:9")  # configured: looked up on demand only
def test_preview_shows_both_environments_with_overrides(staff, generator):
    response = staff.get("/workflows/Generator/preview/?CONTEXT_AWARE=on&enterprise_id=globex")
    assert response.status_code == 200
    rows = {row["name"]: row for row in response.context["rows"]}
    development, production = rows["context_aware"]["cells"]
    assert development["value"] == "true" and development["status"] == "resolved"
    assert production["has_value"] is False and production["reason"] == "suppressed in production"
    assert rows["enterprise_id"]["cells"][0]["value"] == "globex"
    assert rows["concept_overview"]["cells"][0]["status"] == "pending"
    assert [f["env_var"] for f in response.context["fields"]] == [
        "CONTEXT_AWARE", "MONETIZATION_ENABLED",
    ]


@override_settings(MONGODB_URI="")
def test_preview_without_mongodb_shows_database_variables_unresolved(staff, generator):
    response = staff.get("/workflows/Generator/preview/")
    rows = {row["name"]: row for row in response.context["rows"]}
    cell = rows["concept_overview"]["cells"][0]
    assert (cell["status"], cell["reason"]) == ("unresolved", "no MongoDB configured")
    assert "MONGODB_URI is unset" in response.content.decode()


def test_preview_404s_for_an_unknown_workflow(staff, db):
    assert staff.get("/workflows/Nope/preview/").status_code == 404


def test_fetch_validates_its_query(staff, generator):
    url = "/workflows/Generator/preview/fetch/"
    missing = staff.get(url)
    assert missing.status_code == 400 and missing.json()["error"].startswith("variable:")
    wrong = staff.get(url + "?variable=context_aware")
    assert wrong.status_code == 400 and "not a database variable" in wrong.json()["error"]
    long = staff.get(url + "?variable=concept_overview&enterprise_id=" + "x" * 201)
    assert long.status_code == 400 and long.json()["error"].startswith("enterprise_id:")
    assert staff.get("/workflows/Nope/preview/fetch/?variable=x").status_code == 404


def test_fetch_is_staff_only(client, generator):
    response = client.get("/workflows/Generator/preview/fetch/?variable=concept_overview")
    assert response.status_code == 401


@override_settings(MONGODB_URI="")
def test_fetch_without_mongodb_says_so(staff, generator):
    data = staff.get("/workflows/Generator/preview/fetch/?variable=concept_overview").json()
    assert data["status"] == "unresolved"
    assert data["reason"].startswith("no MongoDB configured")
    assert data["source"] == "db.autogen_ai_agents.Concepts.ConceptOverview"


@pytest.mark.mongo
def test_fetch_looks_the_value_up_in_a_real_mongodb(staff, generator, mongo_server):
    with override_settings(MONGODB_URI=mongo_server.uri):
        data = staff.get("/workflows/Generator/preview/fetch/?variable=concept_overview").json()
    assert data["status"] == "resolved"
    assert data["value"].startswith("Acme builds a marketplace")


def test_fetch_reports_an_unreachable_mongodb(staff, generator):
    from devservers.processes import free_port

    closed_port = f"mongodb://127.0.0.1:{free_port()}"
    with override_settings(MONGODB_URI=closed_port, MONGODB_TIMEOUT_MS=300):
        data = staff.get("/workflows/Generator/preview/fetch/?variable=concept_overview").json()
    assert data["status"] == "unresolved"
    assert data["reason"].startswith("MongoDB unreachable")


# -- what the pages pass to the scripts and show ---------------------------------------------
ROUTED_RULES = [
    {"source_agent": "InterviewAgent", "target_agent": "ContextVariablesAgent",
     "condition": "${interview_complete}", "description": "once the interview is done"},
    {"source_agent": "ContextVariablesAgent", "target_agent": "HandoffsAgent",
     "condition": "${context_aware} and ${interview_complete}", "description": ""},
    {"source_agent": "InterviewAgent", "target_agent": "HandoffsAgent",
     "condition": "${context_aware}", "description": "skip ahead when context-aware"},
]


@pytest.fixture
def routed(db):
    from contextadmin.services import workflow_import

    workflow_import(name="Routed", data={**demo_config(), "handoffs": ROUTED_RULES})


def page_data(response) -> dict:
    """The JSON the run page hands to its scripts (json_script "page-data"), as rendered."""
    html = response.content.decode()
    start = html.index('<script id="page-data" type="application/json">') + len(
        '<script id="page-data" type="application/json">'
    )
    return json.loads(html[start:html.index("</script>", start)])


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("categories", ["base", "declarative", "database", "environment", "derived", "supplied"]),
        ("namespaces", ["context", "nodes", "execution", "agent", "world"]),
        ("output_namespaces", ["agent", "world"]),
        ("environments", ["development", "production"]),
        ("event_types",
         ["agent_text", "tool_response", "context_set", "run_status", "handoff", "warning"]),
        ("ended_statuses", ["completed", "failed", "cancelled"]),
        ("base_flags", {"context_aware": "CONTEXT_AWARE",
                        "monetization_enabled": "MONETIZATION_ENABLED"}),
    ],
)
def test_run_page_passes_the_engines_names_to_its_scripts(staff, run, key, expected):
    from contextadmin_sdk.engine import EVENT_TYPES, RUN_ENDED_STATUSES, RUN_STATUSES
    from contextadmin_sdk.engine.format import CATEGORIES, ENVIRONMENTS, OUTPUT_NAMESPACES
    from contextadmin_sdk.engine.loader import BASE_FLAGS
    from contextadmin_sdk.engine.state import NAMESPACES

    owned = {
        "base_flags": dict(BASE_FLAGS),
        "categories": ["base", *CATEGORIES, "supplied"],
        "namespaces": list(NAMESPACES),
        "output_namespaces": list(OUTPUT_NAMESPACES),
        "environments": list(ENVIRONMENTS),
        "event_types": list(EVENT_TYPES),
        "ended_statuses": [s for s in RUN_STATUSES if s in RUN_ENDED_STATUSES],
    }
    constants = page_data(staff.get(f"/runs/{run.pk}/"))["constants"]
    assert constants[key] == owned[key]  # rendered from the engine, not re-declared
    assert sorted(constants[key]) == sorted(expected)  # and what the scripts expect today


def test_run_page_passes_the_pinned_hand_off_rules_and_has_the_graph(staff, routed):
    from runs.services import lifecycle

    started = lifecycle.run_start(workflow_name="Routed", enterprise_id="acme")
    response = staff.get(f"/runs/{started.run.pk}/")
    assert [
        (rule["source_agent"], rule["target_agent"], rule["condition"])
        for rule in page_data(response)["handoffs"]
    ] == [(r["source_agent"], r["target_agent"], r["condition"]) for r in ROUTED_RULES]
    html = response.content.decode()
    assert 'id="graph"' in html and 'id="handoffs"' in html


@pytest.mark.parametrize(
    ("query", "rule", "environment", "status", "label"),
    [
        ("", 0, "development", "not yet", "not yet"),
        ("", 0, "production", "not yet", "not yet"),
        ("?CONTEXT_AWARE=on", 1, "development", "not yet", "not yet"),
        ("?CONTEXT_AWARE=on", 1, "production", "never", "never in production"),
        ("?CONTEXT_AWARE=on", 2, "development", "holds", "holds"),
        ("?CONTEXT_AWARE=off", 2, "development", "not yet", "not yet"),
        ("", 2, "development", "not yet", "not yet"),  # unset boolean: false in development
        ("?CONTEXT_AWARE=on", 2, "production", "never", "never in production"),
    ],
)
def test_preview_judges_hand_offs_with_the_engine_per_environment(
    staff, routed, query, rule, environment, status, label
):
    response = staff.get(f"/workflows/Routed/preview/{query}")
    assert response.status_code == 200
    handoff = response.context["handoffs"][rule]
    assert handoff["condition"] == ROUTED_RULES[rule]["condition"]
    cell = next(c for c in handoff["cells"] if c["environment"] == environment)
    assert (cell["status"], cell["label"]) == (status, label)
    if status == "never":
        assert "environment variables are suppressed" in cell["reason"]
    html = response.content.decode()
    assert f'data-environment="{environment}" data-status="{status}"' in html
    assert f">{label}</span>" in html


def test_preview_never_says_not_yet_for_a_rule_gated_on_a_suppressed_variable(staff, routed):
    html = staff.get("/workflows/Routed/preview/?CONTEXT_AWARE=on").content.decode()
    table = html[html.index('id="preview-handoffs"'):]
    assert table.count(">never in production</span>") == 2
    assert "never in development" not in table
