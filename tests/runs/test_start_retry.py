"""A start whose run_id is taken: the same run again when it asks for the same run (a retry is
idempotent), and a ``409`` naming what differs when it does not, with nothing changed
(docs/api.md "Start a run"). And what the state API says the run is pinned to, which a resume
compares with the definitions its runtime holds."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from contextadmin_sdk.engine.format import config_digest, parse_config

from runs.models import Run
from tests.runs.conftest import Api

pytestmark = pytest.mark.django_db

START = {"workflow": "Generator", "enterprise_id": "acme", "run_id": "retried"}


def exported(api: Api, *, environment: str = "development") -> dict[str, Any]:
    response = api.get(f"/api/workflows/Generator/context_variables.json?environment={environment}")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def edited(document: dict[str, Any]) -> dict[str, Any]:
    """An operator's hand edit of an export: one description changed."""
    copied = copy.deepcopy(document)
    copied.pop("version", None)
    copied["context_variables"]["derived_variables"][0]["description"] = "edited by hand"
    return copied


def stored(run_id: str) -> tuple[str, str, int | None]:
    run = Run.objects.get(pk=run_id)
    return run.definitions_hash, run.environment, run.workflow_version


@pytest.mark.parametrize(
    "again",
    [
        pytest.param({}, id="no definitions: the run keeps what it took"),
        pytest.param({"definitions": "same"}, id="the same export"),
        pytest.param({"definitions": "reference"}, id="a reference to the same version"),
        pytest.param({"definitions": "production"}, id="the version's production export"),
    ],
)
def test_a_retry_asking_for_the_same_run_gets_it_again(api: Api, again: dict[str, Any]):
    document = exported(api)
    first = api.post("/api/runs/", {**START, "definitions": document})
    before = stored("retried")
    choices = {
        "same": document,
        "reference": {
            "version": document["version"]["number"],
            "digest": document["version"]["digest"],
        },
        "production": exported(api, environment="production"),
    }
    body = {**START, **{k: choices[v] for k, v in again.items()}}
    response = api.post("/api/runs/", body)
    assert (first.status_code, response.status_code) == (201, 200), response.content
    assert response.json()["run_id"] == "retried"
    assert stored("retried") == before


def test_a_retry_with_other_definitions_is_refused_naming_both_digests(api: Api):
    document = exported(api)
    api.post("/api/runs/", {**START, "definitions": document})
    before = stored("retried")
    response = api.post("/api/runs/", {**START, "definitions": edited(document)})
    assert response.status_code == 409
    body = response.json()
    assert body["field"] == "definitions"
    pinned = f"sha256:{before[0]} (version {before[2]})"
    assert f"run retried is pinned to {pinned}, this start sends sha256:" in body["error"]
    assert "start a new run" in body["error"]
    assert stored("retried") == before and Run.objects.count() == 1


def test_a_retry_in_another_environment_is_refused(api: Api):
    api.post("/api/runs/", {**START, "environment": "development"})
    response = api.post("/api/runs/", {**START, "environment": "production"})
    assert response.status_code == 409
    assert response.json()["field"] == "environment"
    assert response.json()["error"] == (
        "environment: run retried started in development, this start says production; a "
        "retried start asks for the same run (or start a new run)"
    )
    assert Run.objects.get(pk="retried").environment == "development"


def test_the_state_api_names_both_digests_a_runtime_may_hold(api: Api):
    """A runtime deployed with the full export or with the production export holds the run's
    definitions: the state names the digest of each."""
    full, production = exported(api), exported(api, environment="production")
    run_id = api.start(definitions=production)["run_id"]
    pinned = api.get(f"/api/runs/{run_id}/state/").json()["definitions"]
    assert pinned["source"] == "version"
    assert pinned["digest"] == config_digest(parse_config(full).config)
    assert pinned["digest_production"] == config_digest(parse_config(production).config)
    assert pinned["digest"] != pinned["digest_production"]  # the demo has environment variables
