"""The export API and the JSON Schema endpoint (and the checked-in schema file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from contextadmin_sdk.engine import format as fmt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from jsonschema import Draft202012Validator

from contextadmin import selectors
from contextadmin.models import Variable, Workflow, WorkflowVersion
from contextadmin.services import workflow_import
from tests.contextadmin.conftest import EXAMPLE_PATH

SCHEMA_FILE = Path(settings.BASE_DIR) / "docs" / "context_variables.schema.json"


def url(name: str) -> str:
    return f"/api/workflows/{name}/context_variables.json"


@pytest.mark.django_db
def test_staff_download_is_the_export_as_an_attachment(
    staff_client: Client, generator: Workflow
) -> None:
    response = staff_client.get(url("Generator"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="context_variables.json"'
    assert response.content == fmt.export_with_version(
        selectors.workflow_export(workflow=generator), number=1
    )


@pytest.mark.django_db
def test_production_variant(staff_client: Client, generator: Workflow) -> None:
    response = staff_client.get(url("Generator"), {"environment": "production"})
    assert response.status_code == 200
    assert json.loads(response.content)["context_variables"]["environment_variables"] == []
    assert response.content == fmt.export_with_version(
        selectors.workflow_export(workflow=generator, environment="production"), number=1
    )


@pytest.mark.django_db
@pytest.mark.parametrize("environment", ["staging", "", "PRODUCTION"])
def test_bad_environment_is_a_json_400_naming_the_field(
    staff_client: Client, generator: Workflow, environment: str
) -> None:
    response = staff_client.get(url("Generator"), {"environment": environment})
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "environment" and body["error"].startswith("environment:")


@pytest.mark.django_db
def test_unknown_workflow_is_a_json_404(staff_client: Client) -> None:
    response = staff_client.get(url("Nope"))
    assert response.status_code == 404
    assert response.json() == {"error": "name: no workflow named 'Nope'", "field": "name"}


@pytest.mark.django_db
def test_anonymous_is_401_even_for_unknown_workflows(client: Client, generator: Workflow) -> None:
    for name in ("Generator", "Nope"):
        response = client.get(url(name))
        assert response.status_code == 401
        assert "error" in response.json()
        assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.django_db
def test_non_staff_is_403(client: Client, generator: Workflow) -> None:
    user = get_user_model().objects.create_user("viewer", password="x")
    client.force_login(user)
    response = client.get(url("Generator"))
    assert response.status_code == 403
    assert response.json()["error"].startswith("session: staff")


@pytest.mark.django_db
def test_other_methods_are_a_json_405(staff_client: Client, generator: Workflow) -> None:
    response = staff_client.post(url("Generator"))
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD" and "error" in response.json()


@pytest.mark.django_db
def test_definitions_that_break_a_rule_are_a_json_409(
    staff_client: Client, generator: Workflow
) -> None:
    """Only a workflow without versions is served from its rows (docs/versions.md): rows that
    break a rule there are a 409; a published version is served as stored."""
    Variable.objects.filter(name="product_tier").update(name="Bad Name")  # bypassing the admin
    assert staff_client.get(url("Generator")).status_code == 200  # version 1, as published
    WorkflowVersion.objects.filter(workflow=generator).delete()
    response = staff_client.get(url("Generator"))
    assert response.status_code == 409
    assert response.json()["issues"][0]["path"] == "context_variables.declarative_variables[0].name"


# -- the schema ---------------------------------------------------------------------------------
def test_schema_endpoint_serves_the_generated_schema(client: Client) -> None:
    response = client.get("/schema/context_variables.schema.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/schema+json")
    assert json.loads(response.content) == fmt.json_schema()


def test_checked_in_schema_matches_schema_py() -> None:
    assert SCHEMA_FILE.read_bytes() == selectors.schema_export_bytes(), (
        "docs/context_variables.schema.json is out of date: "
        "run `.venv/bin/python manage.py export_schema -o docs/context_variables.schema.json`"
    )


def _validator() -> Draft202012Validator:
    document = json.loads(SCHEMA_FILE.read_bytes())
    Draft202012Validator.check_schema(document)
    return Draft202012Validator(document)


def test_the_example_validates_against_the_schema() -> None:
    errors = list(_validator().iter_errors(json.loads(EXAMPLE_PATH.read_bytes())))
    assert errors == []


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(
            {"context_variables": {"declarative_variables": [{"name": "x"}]}}, id="value-missing"
        ),
        pytest.param(
            {"context_variables": {"derived_variables": [{"name": "x", "type": "string"}]}},
            id="derived-not-boolean",
        ),
        pytest.param(
            {
                "context_variables": {
                    "derived_variables": [
                        {"name": "x", "triggers": [{"type": "agent_text", "agent": "A"}]}
                    ]
                }
            },
            id="match-missing",
        ),
        pytest.param({"context_variables": {}, "extra": 1}, id="unknown-key"),
    ],
)
def test_the_schema_rejects_what_parse_config_rejects(document: dict[str, Any]) -> None:
    assert list(_validator().iter_errors(document))
    with pytest.raises(fmt.ConfigError):
        fmt.parse_config(document)


@pytest.mark.django_db
def test_the_export_names_its_version_and_a_matching_etag_is_304(
    staff_client: Client, generator: Workflow
) -> None:
    response = staff_client.get(url("Generator"))
    assert response.status_code == 200
    assert response["X-Context-Version"] == "1"
    assert response["X-Context-Version-Status"] == "published"
    etag = response["ETag"]
    again = staff_client.get(url("Generator"), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert staff_client.get(url("Generator"), HTTP_IF_NONE_MATCH='"other"').status_code == 200
    # weakened by a compressing proxy (nginx's gzip), in a list: still the same export
    weak = staff_client.get(url("Generator"), HTTP_IF_NONE_MATCH=f'"other", W/{etag}')
    assert weak.status_code == 304
    assert staff_client.get(url("Generator") + "?version=1").status_code == 200
    missing = staff_client.get(url("Generator") + "?version=9")
    assert missing.status_code == 404 and missing.json()["field"] == "version"
    assert missing.json()["error"].startswith("version:")


@pytest.mark.django_db
@pytest.mark.parametrize("environment", ["development", "production"])
def test_the_export_carries_its_version_and_the_digest_of_its_definitions(
    staff_client: Client, generator: Workflow, environment: str
) -> None:
    """The digest is of the definitions without the version key: the loader ignores the key,
    and the same definitions parsed back give the same digest (what a runtime sends)."""
    body = staff_client.get(url("Generator"), {"environment": environment}).content
    document = json.loads(body)
    assert next(iter(document)) == "version"
    rows = selectors.workflow_export(workflow=generator, environment=environment)
    assert document["version"] == {"number": 1, "digest": fmt.export_digest(rows)}
    config = fmt.parse_config(body).config
    assert config.version == fmt.ExportVersion(number=1, digest=fmt.export_digest(rows))
    assert fmt.config_export_bytes(config) == rows  # the loader ignores the version
    assert fmt.config_digest(config) == document["version"]["digest"]
    # byte-stable: the same version always serves the same bytes, and they re-version alike
    assert staff_client.get(url("Generator"), {"environment": environment}).content == body
    assert fmt.export_with_version(body, number=1) == body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("version", "field"),
    [
        ({"number": 1}, "version.digest"),
        ({"number": 0, "digest": "sha256:" + "0" * 64}, "version.number"),
        ({"number": 1, "digest": "md5:abc"}, "version.digest"),
        ({"number": 1, "digest": "sha256:" + "0" * 64, "extra": 1}, "version.extra"),
        ("3", "version"),
    ],
)
def test_a_malformed_version_key_is_refused_naming_it(version: Any, field: str) -> None:
    document = json.loads(EXAMPLE_PATH.read_bytes())
    with pytest.raises(fmt.ConfigError) as caught:
        fmt.parse_config({**document, "version": version})
    assert any(fmt.format_loc(issue.loc).startswith(field) for issue in caught.value.issues)



@pytest.mark.django_db
def test_an_export_imports_back_unchanged_its_version_key_ignored(
    staff_client: Client, generator: Workflow
) -> None:
    body = staff_client.get(url("Generator")).content
    result = workflow_import(name="Generator", data=body, replace=True)
    assert not result.diff  # the version key is no definition: nothing changed
    assert fmt.export_with_version(
        selectors.workflow_export(workflow=generator), number=1
    ) == staff_client.get(url("Generator") + "?version=1").content
