"""The admin import page: upload -> report with JSON paths -> diff -> apply."""

from __future__ import annotations

import copy
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from contextadmin import selectors
from contextadmin.admin.imports import PENDING_IMPORT_KEY
from contextadmin.models import Variable, Workflow
from tests.contextadmin.conftest import db_dump
from tests.contextadmin.test_import_export import _DELETE, CV, Mutation, _set

pytestmark = pytest.mark.django_db

IMPORT_URL = "/admin/contextadmin/workflow/import/"


def into_url(workflow: Workflow) -> str:
    return reverse("admin:contextadmin_workflow_import_into", args=[workflow.pk])


def upload(client: Client, url: str, name: str, content: bytes) -> Any:
    file = SimpleUploadedFile("context_variables.json", content, content_type="application/json")
    return client.post(url, {"step": "upload", "name": name, "file": file})


def apply(client: Client, url: str, response: Any) -> Any:
    return client.post(url, {"step": "apply", "token": response.context["token"]})


def issue_cell(path: str, subject: str = "") -> str:
    """Return how the report renders a problem's path and the definition it falls in."""
    named = f' <span class="import-issue-subject">({subject})</span>' if subject else ""
    return f"<td><code>{path}</code>{named}</td>"


def test_pages_render(staff_client: Client, generator: Workflow) -> None:
    assert staff_client.get(IMPORT_URL).status_code == 200
    response = staff_client.get(into_url(generator))
    assert response.status_code == 200
    assert 'value="Generator"' in response.content.decode()


def test_invalid_file_shows_the_report_with_json_paths(
    staff_client: Client, generator: Workflow, example: dict
) -> None:
    del example["context_variables"]["derived_variables"][0]["triggers"][0]["agent"]
    example["context_variables"]["environment_variables"][0]["source"]["env_var"] = "AWS_SECRET"
    before = db_dump()
    response = upload(staff_client, into_url(generator), "Generator", json.dumps(example).encode())
    html = response.content.decode()
    assert response.status_code == 200
    assert "Rejected: 2 problems. Nothing was changed." in html
    # Each path is the file's, from its root, and names the variable too (issue 16).
    assert issue_cell(
        "context_variables.derived_variables[0].triggers[0].agent", "interview_complete"
    ) in html
    assert issue_cell(
        "context_variables.environment_variables[0].source.env_var", "context_aware"
    ) in html
    assert "AWS_SECRET looks like a secret" in html
    assert PENDING_IMPORT_KEY not in staff_client.session
    assert db_dump() == before


# Each problem of an import: its full JSON path from the document's root, as in the file (an
# item's field and a whole list alike), and the definition it falls in when there is one.
IMPORT_PATHS = [
    pytest.param(
        _set(f"{CV}.derived_variables[0].triggers[0].agent", _DELETE),
        [(f"{CV}.derived_variables[0].triggers[0].agent", "interview_complete")],
        id="a-trigger-field",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[1].value", "many"),
        [(f"{CV}.declarative_variables[1].value", "max_items")],
        id="a-variable-field",
    ),
    pytest.param(
        _set(f"{CV}.environment_variables[0].source.env_var", "AWS_SECRET"),
        [(f"{CV}.environment_variables[0].source.env_var", "context_aware")],
        id="a-source-field",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].name", "max_items"),
        [(f"{CV}.derived_variables[0].name", "max_items")],
        id="a-rule-across-variables",
    ),
    pytest.param(
        _set(f"{CV}.database_variables[0]", 5),
        [(f"{CV}.database_variables[0]", "")],
        id="an-item-not-an-object",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables", {"name": "x"}),
        [(f"{CV}.declarative_variables", "")],
        id="a-whole-list",
    ),
    pytest.param(
        _set(f"{CV}.database_name", ""), [(f"{CV}.database_name", "")], id="the-database-name"
    ),
    pytest.param(_set(CV, []), [(CV, "")], id="the-section"),
    pytest.param(
        _set("handoffs", [{"source_agent": "InterviewAgent", "target_agent": "PlannerAgent",
                           "condition": "${interview_complete} or ${context_aware}"}]),
        [("handoffs[0].condition", "InterviewAgent → PlannerAgent")],
        id="a-handoff-field",
    ),
    pytest.param(
        _set("outputs", [{"tool": "t", "field": "f", "to": "agent.a"},
                         {"tool": "u", "field": "g", "to": "agent.a"}]),
        [("outputs[1].to", "u.g → agent.a")],
        id="a-mapping-field",
    ),
    pytest.param(_set("outputs", "nope"), [("outputs", "")], id="the-mappings-list"),
    pytest.param(_set("colour", "red"), [("colour", "")], id="an-unknown-key"),
    pytest.param(
        _set("derived_variables", []), [("derived_variables", "")], id="flat-and-nested"
    ),
    pytest.param(
        _set("version", {"number": 0, "digest": "x"}),
        [("version.number", ""), ("version.digest", "")],
        id="the-version",
    ),
]


@pytest.mark.parametrize("surface", ["import-page", "import_context"])
@pytest.mark.parametrize(("mutate", "expected"), IMPORT_PATHS)
def test_import_errors_name_the_full_path_from_the_document_root(
    staff_client: Client, generator: Workflow, example: dict[str, Any], tmp_path: Path,
    mutate: Mutation, expected: list[tuple[str, str]], surface: str,
) -> None:
    content = json.dumps(mutate(copy.deepcopy(example))).encode()
    before = db_dump()
    if surface == "import-page":
        html = upload(staff_client, into_url(generator), "Generator", content).content.decode()
        cells = re.findall(r'<tr class="import-issue">(<td>.*?</td>)<td>', html)
        assert cells == [issue_cell(path, subject) for path, subject in expected]
    else:
        path = tmp_path / "context_variables.json"
        path.write_bytes(content)
        err = io.StringIO()
        with pytest.raises(CommandError, match="nothing changed"):
            call_command("import_context", str(path), "--workflow", "Generator", "--replace",
                         stderr=err)
        lines = err.getvalue().splitlines()
        assert len(lines) == len(expected), lines
        for line, (path_, subject) in zip(lines, expected, strict=True):
            assert line.startswith(f"error: {path_} ({subject}): " if subject
                                   else f"error: {path_}: "), line
    assert db_dump() == before


def diff_entry(change: str, subject: str, detail: str) -> str:
    """Return how the shared diff template renders one entry with one detail."""
    symbol = {"added": "+", "removed": "-", "changed": "~"}[change]
    return (
        f'<li class="diff-entry diff-{change}"><span class="diff-symbol" aria-hidden="true">'
        f'{symbol}</span> <span class="diff-change">{change}</span> '
        f'<strong class="diff-subject">{subject}</strong>\n      '
        f'<ul class="diff-details"><li>{detail}</li></ul>'
    )


@pytest.mark.parametrize(
    "content",
    [b"{", b"\xff\xfe\x00", b"[1]", b"[" * 100_000, b'{"handoffs": ' + b"9" * 5000 + b"}"],
    ids=["truncated", "binary", "list", "deep", "huge-integer"],
)
def test_unreadable_files_are_reported_not_crashing(staff_client: Client, content: bytes) -> None:
    response = upload(staff_client, IMPORT_URL, "New", content)
    assert response.status_code == 200
    assert "Rejected: 1 problem." in response.content.decode()
    assert not Workflow.objects.exists()


def test_new_workflow_preview_then_apply(staff_client: Client, example_bytes: bytes) -> None:
    response = upload(staff_client, IMPORT_URL, "Fresh", example_bytes)
    html = response.content.decode()
    assert "Creates workflow Fresh: 7 added, 0 removed, 0 changed" in html
    assert diff_entry("added", "derived variable interview_complete", "boolean, 1 trigger") in html
    assert not Workflow.objects.exists(), "a preview changes nothing"

    response = apply(staff_client, IMPORT_URL, response)

    workflow = Workflow.objects.get(name="Fresh")
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:contextadmin_workflow_change", args=[workflow.pk])
    assert json.loads(selectors.workflow_export(workflow=workflow)) == json.loads(example_bytes)
    assert PENDING_IMPORT_KEY not in staff_client.session


def test_replace_existing_workflow(
    staff_client: Client, generator: Workflow, example: dict
) -> None:
    changed = copy.deepcopy(example)
    changed["context_variables"]["declarative_variables"][0]["value"] = "ga"
    changed["variables"] = []
    response = upload(staff_client, into_url(generator), "Generator", json.dumps(changed).encode())
    html = response.content.decode()
    assert "Replaces the definitions of Generator: 0 added, 0 removed, 1 changed" in html
    assert (
        diff_entry(
            "changed",
            "declarative variable product_tier",
            "value &quot;beta&quot; → &quot;ga&quot;",
        )
        in html
    )
    assert "variables: legacy key ignored" in html

    response = apply(staff_client, into_url(generator), response)

    assert response.status_code == 302
    assert Variable.objects.get(name="product_tier").value == "ga"
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("Replaced the definitions of Generator" in m for m in messages)


def test_importing_the_same_definitions_again_changes_nothing_and_says_so(
    staff_client: Client, generator: Workflow, example_bytes: bytes, tmp_path: Path
) -> None:
    """It recorded (and published) a new version, "0 added, 0 removed, 0 changed", and made
    every row again: ids an open workflow page still posted."""
    rows = sorted(Variable.objects.values_list("pk", flat=True))
    response = upload(staff_client, into_url(generator), "Generator", example_bytes)
    assert "0 added, 0 removed, 0 changed" in response.content.decode()
    before = db_dump()
    response = apply(staff_client, into_url(generator), response)
    assert response.status_code == 302
    messages = [str(m) for m in response.wsgi_request._messages]
    assert messages == [
        "Generator already has exactly these definitions (version 1): nothing changed, no new "
        "version."
    ]
    assert db_dump() == before
    assert sorted(Variable.objects.values_list("pk", flat=True)) == rows
    out = io.StringIO()
    path = tmp_path / "context_variables.json"
    path.write_bytes(example_bytes)
    call_command("import_context", str(path), "--workflow", "Generator", "--replace", stdout=out)
    assert out.getvalue().splitlines()[-1] == (
        "unchanged: workflow Generator already has these definitions (version 1); no new version"
    )
    assert db_dump() == before


def test_apply_trusts_only_the_server_side_upload(
    staff_client: Client, example_bytes: bytes
) -> None:
    response = upload(staff_client, IMPORT_URL, "Fresh", example_bytes)
    token = response.context["token"]
    forged = staff_client.post(
        IMPORT_URL, {"step": "apply", "token": "forged", "name": "Evil", "data": "{}"}
    )
    assert forged.status_code == 302 and not Workflow.objects.exists()
    staff_client.post(IMPORT_URL, {"step": "apply", "token": token, "name": "Evil"})
    assert list(Workflow.objects.values_list("name", flat=True)) == ["Fresh"]


def test_apply_without_a_pending_upload(staff_client: Client) -> None:
    response = staff_client.post(IMPORT_URL, {"step": "apply", "token": "x"}, follow=True)
    assert "no longer pending" in response.content.decode()
    assert not Workflow.objects.exists()


def test_apply_twice_applies_once(staff_client: Client, example_bytes: bytes) -> None:
    preview = upload(staff_client, IMPORT_URL, "Fresh", example_bytes)
    assert apply(staff_client, IMPORT_URL, preview).status_code == 302
    again = apply(staff_client, IMPORT_URL, preview)
    assert again.status_code == 302 and again["Location"] == IMPORT_URL


def test_definitions_changed_since_the_preview(
    staff_client: Client, generator: Workflow, example: dict
) -> None:
    changed = copy.deepcopy(example)
    changed["context_variables"]["declarative_variables"][0]["value"] = "ga"
    preview = upload(staff_client, into_url(generator), "Generator", json.dumps(changed).encode())
    Variable.objects.filter(name="max_items").update(value=99)  # someone edits meanwhile
    before = db_dump()

    response = apply(staff_client, into_url(generator), preview)

    assert response.status_code == 200
    html = response.content.decode()
    assert (
        "changed since the preview" in html
        and diff_entry("changed", "declarative variable max_items", "value 99 → 25") in html
    )
    assert db_dump() == before


def test_every_problem_is_reported_in_one_pass(
    staff_client: Client, generator: Workflow, example: dict
) -> None:
    """Field errors no longer hide duplicate names and hand-off condition rules."""
    section = example["context_variables"]
    section["declarative_variables"][1]["value"] = "many"
    section["declarative_variables"].append({"name": "product_tier", "value": "x"})
    example["handoffs"] = [
        {
            "source_agent": "InterviewAgent",
            "target_agent": "PlannerAgent",
            "condition": "${interview_complete} or ${context_aware}",
        }
    ]
    response = upload(staff_client, into_url(generator), "Generator", json.dumps(example).encode())
    html = response.content.decode()
    assert "Rejected: 3 problems. Nothing was changed." in html
    assert issue_cell("context_variables.declarative_variables[1].value", "max_items") in html
    assert issue_cell("context_variables.declarative_variables[2].name", "product_tier") in html
    assert "already declared" in html
    assert issue_cell("handoffs[0].condition", "InterviewAgent → PlannerAgent") in html
    assert "&quot;or&quot; is not allowed" in html


def test_upload_size_limit(staff_client: Client, settings: Any, example_bytes: bytes) -> None:
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 100
    response = upload(staff_client, IMPORT_URL, "Fresh", example_bytes)
    assert response.status_code == 200
    errors = response.context["form"].errors["file"]
    assert errors == [f"The file is {len(example_bytes)} bytes; the limit is 100 bytes."]
    assert not Workflow.objects.exists()


def test_bad_workflow_name_on_the_form(staff_client: Client, example_bytes: bytes) -> None:
    response = upload(staff_client, IMPORT_URL, "has space", example_bytes)
    assert response.context["form"].errors["name"]


def test_csrf_is_enforced(staff: Any, example_bytes: bytes) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    response = upload(client, IMPORT_URL, "Fresh", example_bytes)
    assert response.status_code == 403
    assert not Workflow.objects.exists()


def test_staff_only(client: Client, example_bytes: bytes) -> None:
    response = upload(client, IMPORT_URL, "Fresh", example_bytes)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not Workflow.objects.exists()
