"""A run is pinned to the definitions its runtime ran with (issue 20, item 6), and records the
runtime that reported it (issue 21): a fleet deployed with an old export keeps starting runs
after a newer version is published; definitions the server never saw are kept with the run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contextadmin_sdk.engine import build_context
from contextadmin_sdk.engine import format as fmt
from django.contrib.auth import get_user_model
from django.test import Client

from contextadmin.models import Workflow
from runs.models import Run, RunEvent
from tests.runs.conftest import Api, demo_events
from tests.runs.test_run_versions import publish

pytestmark = pytest.mark.django_db

EXPORT = "/api/workflows/Generator/context_variables.json"
RUNTIME = {"framework": "autogen", "version": "0.14.1", "sdk": "0.1.0"}


def deployed(api: Api, **query: str) -> dict[str, Any]:
    """What a deployment pipeline shipped: the export as served now (with its version key)."""
    response = api.get(EXPORT, data=query)
    assert response.status_code == 200
    document: dict[str, Any] = json.loads(response.content)
    return document


def runtime_context(document: dict[str, Any]) -> dict[str, Any]:
    """The context a runtime builds from its export (as ``attach`` does) and sends at start."""
    built = build_context(document, workflow_name="Generator", enterprise_id="acme", environ={})
    return dict(built.values)


def test_runs_started_with_the_old_export_after_a_publish_are_pinned_to_it_and_lose_nothing(
    api: Api, generator: Workflow, staff_client: Client
) -> None:
    export_v1 = deployed(api)
    assert export_v1["version"]["number"] == 1
    context = runtime_context(export_v1)
    assert context["max_items"] == 25
    publish(max_items=40)  # the operator publishes version 2 while the fleet runs version 1
    # Without definitions the old context is judged by version 2, as the contract says:
    refused = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", "context": context}
    )
    assert refused.status_code == 400 and "max_items is a constant" in refused.json()["error"]
    runs = []
    for _ in range(3):  # the fleet keeps starting runs and reporting events
        started = api.start(context=context, definitions=export_v1, runtime=RUNTIME)
        run_id = started["run_id"]
        assert started["state"]["workflow_version"] == 1
        assert started["state"]["definitions"]["source"] == "version"
        assert started["state"]["state"]["context"]["max_items"] == 25
        answer = api.events(run_id, demo_events())
        assert answer.status_code == 200, answer.content
        runs.append(run_id)
    for run_id in runs:
        run = Run.objects.get(pk=run_id)
        assert run.workflow_version == 1 and run.definitions_source == "version"
        assert run.definitions == fmt.config_export_dict(fmt.parse_config(export_v1).config)
        assert RunEvent.objects.filter(run=run).count() == len(demo_events())
        version = staff_client.get(f"/api/runs/{run_id}/version/").json()
        assert version["number"] == 1 and version["published"] == 2 and version["outdated"]
        page = staff_client.get(f"/runs/{run_id}/").content.decode()
        assert "ran version 1, version 2 is published" in page
        assert "AG2 Classic 0.14.1 · SDK 0.1.0" in page  # the runtime that reported it
    assert api.start()["state"]["workflow_version"] == 2  # new runs without definitions: v2


def test_a_production_export_pins_its_version(api: Api, generator: Workflow) -> None:
    export = deployed(api, environment="production")
    publish(max_items=40)
    started = api.start(environment="production", definitions=export)
    run = Run.objects.get(pk=started["run_id"])
    assert run.workflow_version == 1 and run.definitions_source == "version"
    # the run keeps the version's full definitions; production gates them at run time
    assert run.definitions["context_variables"]["environment_variables"]


def test_definitions_never_published_here_are_kept_with_the_run(
    api: Api, generator: Workflow, staff_client: Client
) -> None:
    edited = deployed(api)
    edited["context_variables"]["declarative_variables"][1]["value"] = 99  # a local edit
    started = api.start(context=runtime_context(edited), definitions=edited, runtime=RUNTIME)
    assert started["state"]["state"]["context"]["max_items"] == 99
    assert started["state"]["workflow_version"] is None
    assert started["state"]["definitions"] == {
        "source": "runtime",
        "digest": fmt.config_digest(fmt.parse_config(edited).config),
        "digest_production": fmt.config_digest(fmt.parse_config(edited).config, production=True),
    }
    run = Run.objects.get(pk=started["run_id"])
    assert run.definitions_source == "runtime"
    assert run.definitions_declared["number"] == 1  # it says where it came from
    assert run.definitions["context_variables"]["declarative_variables"][1]["value"] == 99
    assert api.events(run.pk, demo_events()).status_code == 200
    publish(max_items=40)  # later edits never change a run
    run.refresh_from_db()
    assert run.definitions["context_variables"]["declarative_variables"][1]["value"] == 99
    page = staff_client.get(f"/runs/{run.pk}/").content.decode()
    assert "definitions not published here" in page
    assert "edited from version 1" in page
    # the diff from the published version to what the run ran with
    assert "~ declarative variable max_items: value 40 → 99" in page


def test_a_reference_pins_a_known_version_and_an_unknown_one_is_a_409(
    api: Api, generator: Workflow
) -> None:
    digest = deployed(api)["version"]["digest"]
    publish(max_items=40)
    started = api.start(definitions={"version": 1, "digest": digest})
    assert started["state"]["workflow_version"] == 1
    assert api.start(definitions={"digest": digest})["state"]["workflow_version"] == 1
    before = Run.objects.count()
    unknown = api.post(
        "/api/runs/",
        {
            "workflow": "Generator",
            "enterprise_id": "acme",
            "definitions": {"version": 1, "digest": "sha256:" + "0" * 64},
        },
    )
    assert unknown.status_code == 409
    assert unknown.json()["error"].startswith("definitions:")
    assert "send the full definitions" in unknown.json()["error"]
    assert Run.objects.count() == before


def test_the_runtime_is_stored_and_returned(api: Api, generator: Workflow) -> None:
    started = api.start(runtime=RUNTIME)
    assert started["state"]["runtime"] == RUNTIME
    assert Run.objects.get(pk=started["run_id"]).runtime == RUNTIME
    state = api.get(f"/api/runs/{started['run_id']}/state/").json()
    assert state["runtime"] == RUNTIME
    assert api.start()["state"]["runtime"] == {}  # optional


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("runtime", "autogen", "runtime:"),
        ("runtime", {"version": "1.2.1"}, "runtime.framework: required"),
        ("runtime", {"framework": "ag2", "os": "linux"}, "runtime.os: unknown field"),
        ("runtime", {"framework": 2}, "runtime.framework: 1-64 characters of letters"),
        ("runtime", {"framework": True}, "runtime.framework: 1-64 characters of letters, digits, "
         "'.', '_', '+' and '-', got true"),
        ("runtime", {"framework": ""}, "runtime.framework:"),
        ("runtime", {"framework": "ag2", "version": "1 2"}, "runtime.version:"),
        ("runtime", {"framework": "ag2", "sdk": "x" * 65}, "runtime.sdk: at most 64"),
        ("definitions", "v1", "definitions:"),
        ("definitions", [], "definitions:"),
        ("definitions", {"version": "1"}, 'definitions.version: a version number, got "1"'),
        ("definitions", {"version": True}, "definitions.version: a version number, got true"),
        ("definitions", {"digest": "sha256:ABC"}, "definitions.digest:"),
        ("definitions", {"version": None}, "definitions: give the version"),
        (
            "definitions",
            {"context_variables": {"declarative_variables": [{"name": "Bad"}]}},
            "definitions.context_variables.declarative_variables[0]",
        ),
        ("definitions", {"handoffs": 3}, "definitions.handoffs"),
        ("definitions", {"version": {"number": 1, "digest": "x"}, "handoffs": []},
         "definitions.version.digest"),
    ],
)
def test_bad_runtime_or_definitions_are_a_4xx_naming_the_field_and_store_nothing(
    api: Api, generator: Workflow, field: str, value: Any, named: str
) -> None:
    response = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", field: value}
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(named), response.json()
    assert not Run.objects.exists()


def test_definitions_over_the_size_limit_are_a_413(api: Api, generator: Workflow) -> None:
    from runs.services.run_pinning import DEFINITIONS_MAX_BYTES

    document = deployed(api)
    document["context_variables"]["declarative_variables"][0]["description"] = "x" * (
        DEFINITIONS_MAX_BYTES
    )
    response = api.post(
        "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", "definitions": document}
    )
    assert response.status_code == 413
    assert response.json()["error"].startswith("definitions:")
    assert not Run.objects.exists()


@pytest.fixture
def staff_client(db: None) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("ana", "a@example.com", "pw"))
    return client
