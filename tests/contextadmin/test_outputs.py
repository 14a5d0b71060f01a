"""Seed 004's output mappings as definitions: imported, exported, edited, diffed, versioned."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from contextadmin_sdk.engine.format import ConfigError, config_export_bytes, parse_config
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reversion.models import Version

from contextadmin import selectors, services
from contextadmin.models import OutputMapping, Workflow, WorkflowVersion
from tests.contextadmin.conftest import db_dump
from tests.contextadmin.formdata import add_form, form_data
from tests.contextadmin.test_import_page import (
    IMPORT_URL,
    apply,
    diff_entry,
    into_url,
    issue_cell,
    upload,
)

pytestmark = pytest.mark.django_db

KEYWORDS = {"tool": "extract_keywords", "field": "keywords", "to": "agent.intermediate.keywords"}
DOCUMENTS = {"tool": "search_documents", "field": "document_list",
             "to": "agent.final_result.documents"}


@pytest.fixture
def mapped(example: dict[str, Any]) -> dict[str, Any]:
    return {**copy.deepcopy(example), "outputs": [KEYWORDS, DOCUMENTS]}


def change_url(workflow: Workflow) -> str:
    return reverse("admin:contextadmin_workflow_change", args=[workflow.pk])


# -- import and export ------------------------------------------------------------------------
def test_an_export_without_mappings_is_unchanged(generator: Workflow, example_bytes: bytes) -> None:
    exported = selectors.workflow_export(workflow=generator)
    assert exported == config_export_bytes(parse_config(example_bytes).config)
    assert b'"outputs"' not in exported


def test_import_then_export_keeps_the_mappings_byte_stable(mapped: dict[str, Any]) -> None:
    services.workflow_import(name="Research", data=json.dumps(mapped))
    workflow = Workflow.objects.get(name="Research")
    rows = list(OutputMapping.objects.filter(workflow=workflow).values_list(
        "position", "tool", "field", "to"))
    assert rows == [(0, *KEYWORDS.values()), (1, *DOCUMENTS.values())]
    exported = selectors.workflow_export(workflow=workflow)
    assert json.loads(exported)["outputs"] == [KEYWORDS, DOCUMENTS]
    assert list(json.loads(exported)) == ["context_variables", "outputs"]
    services.workflow_import(name="Again", data=exported)
    assert selectors.workflow_export(workflow=Workflow.objects.get(name="Again")) == exported
    production = selectors.workflow_export(workflow=workflow, environment="production")
    assert json.loads(production)["outputs"] == [KEYWORDS, DOCUMENTS]


@pytest.mark.parametrize(
    ("outputs", "path", "message"),
    [
        pytest.param([KEYWORDS, {**DOCUMENTS, "to": KEYWORDS["to"]}], "outputs[1].to",
                     "is already written by outputs[0]", id="two-mappings-one-path"),
        pytest.param([{**KEYWORDS, "to": "execution.keywords"}], "outputs[0].to",
                     "execution is a namespace the run writes itself", id="namespace"),
        pytest.param([{**KEYWORDS, "to": "context.max_items"}], "outputs[0].to",
                     "names declarative variable max_items", id="collides-with-a-variable"),
        pytest.param([{**KEYWORDS, "tool": "x" * 201}], "outputs[0].tool",
                     "at most 200 characters", id="long-tool"),
    ],
)
def test_a_bad_mapping_is_refused_naming_the_field_and_nothing_changes(
    generator: Workflow, mapped: dict[str, Any], outputs: list[dict[str, Any]], path: str,
    message: str,
) -> None:
    before = db_dump()
    with pytest.raises(ConfigError) as caught:
        services.workflow_import(
            name="Generator", data=json.dumps({**mapped, "outputs": outputs}), replace=True
        )
    assert any(
        issue.path == path and message in issue.message for issue in caught.value.issues
    ), caught.value.issues
    assert db_dump() == before
    assert not OutputMapping.objects.exists()


def test_every_problem_is_reported_at_once(mapped: dict[str, Any]) -> None:
    mapped["outputs"] = [{**KEYWORDS, "field": ""}, {**DOCUMENTS, "to": "world.x"},
                         {**DOCUMENTS, "to": "world.x"}]
    with pytest.raises(ConfigError) as caught:
        services.workflow_import(name="Research", data=json.dumps(mapped))
    assert [issue.path for issue in caught.value.issues] == ["outputs[0].field", "outputs[2].to"]


def test_the_import_page_reports_and_diffs_mappings(
    staff_client: Client, generator: Workflow, mapped: dict[str, Any]
) -> None:
    bad = {**mapped, "outputs": [KEYWORDS, {**DOCUMENTS, "to": "temp.documents"}]}
    response = upload(staff_client, into_url(generator), "Generator", json.dumps(bad).encode())
    html = response.content.decode()
    assert "Rejected: 1 problem. Nothing was changed." in html
    assert issue_cell("outputs[1].to", "search_documents.document_list → temp.documents") in html

    response = upload(staff_client, into_url(generator), "Generator", json.dumps(mapped).encode())
    html = response.content.decode()
    assert "Replaces the definitions of Generator: 2 added, 0 removed, 0 changed" in html
    assert diff_entry("added", "output mapping agent.intermediate.keywords",
                      "set by tool extract_keywords from data.keywords") in html
    response = apply(staff_client, into_url(generator), response)
    assert response.status_code == 302
    assert OutputMapping.objects.filter(workflow=generator).count() == 2


def test_a_new_workflow_from_the_import_page_gets_its_mappings(
    staff_client: Client, mapped: dict[str, Any]
) -> None:
    response = upload(staff_client, IMPORT_URL, "Research", json.dumps(mapped).encode())
    apply(staff_client, IMPORT_URL, response)
    workflow = Workflow.objects.get(name="Research")
    assert json.loads(selectors.workflow_export(workflow=workflow))["outputs"] == [
        KEYWORDS, DOCUMENTS]


# -- versions -------------------------------------------------------------------------------------
def test_mappings_are_versioned_diffed_and_reverted(
    staff_client: Client, generator: Workflow, mapped: dict[str, Any]
) -> None:
    original = selectors.workflow_export(workflow=generator)
    result = services.workflow_import(name="Generator", data=json.dumps(mapped), replace=True)
    assert result.version is not None and result.version.number == 2
    kinds = {v.content_type.model for v in Version.objects.filter(revision=result.version.revision)}
    assert "outputmapping" in kinds
    changed = {**mapped, "outputs": [DOCUMENTS, {**KEYWORDS, "field": "terms"}]}
    services.workflow_import(name="Generator", data=json.dumps(changed), replace=True)

    history = reverse("admin:contextadmin_workflow_history", args=[generator.pk])
    html = staff_client.get(history + "?from=1&to=2").content.decode()
    assert "Version 1 → version 2: 2 added, 0 removed, 0 changed" in html
    html = staff_client.get(history + "?from=2&to=3").content.decode()
    assert ("set by tool extract_keywords from data.keywords → set by tool extract_keywords "
            "from data.terms") in html
    assert "order of the output mappings" in html

    url = reverse("admin:contextadmin_workflow_revert", args=[generator.pk, 1])
    assert staff_client.post(url, {"base_version": "3"}).status_code == 302
    assert selectors.workflow_export(workflow=generator) == original
    assert not OutputMapping.objects.filter(workflow=generator).exists()
    url = reverse("admin:contextadmin_workflow_revert", args=[generator.pk, 2])
    assert staff_client.post(url, {"base_version": "4"}).status_code == 302
    assert json.loads(selectors.workflow_export(workflow=generator))["outputs"] == [
        KEYWORDS, DOCUMENTS]
    assert WorkflowVersion.objects.filter(workflow=generator).count() == 5


# -- the workflow page ----------------------------------------------------------------------------
def page_data(client: Client, workflow: Workflow) -> dict[str, Any]:
    response = client.get(change_url(workflow))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="outputs-group"' in html
    data = form_data(html)
    data["_continue"] = "Save and continue editing"
    return data


def test_the_workflow_page_adds_a_mapping(staff_client: Client, generator: Workflow) -> None:
    data = page_data(staff_client, generator)
    add_form(data, "outputs", **KEYWORDS)
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 302, response.context and response.context["errors"]
    assert json.loads(selectors.workflow_export(workflow=generator))["outputs"] == [KEYWORDS]
    assert WorkflowVersion.objects.filter(workflow=generator).count() == 2
    # the page shows it back, and saving it unchanged records nothing
    data = page_data(staff_client, generator)
    assert data["outputs-0-to"] == KEYWORDS["to"]
    assert staff_client.post(change_url(generator), data).status_code == 302
    assert WorkflowVersion.objects.filter(workflow=generator).count() == 2


@pytest.mark.parametrize(
    ("mappings", "index", "field", "message"),
    [
        pytest.param([{**KEYWORDS, "to": "nodes.x"}], 0, "to",
                     "nodes is a namespace the run writes itself", id="namespace"),
        pytest.param([KEYWORDS, {**DOCUMENTS, "to": KEYWORDS["to"]}], 1, "to",
                     "is already written by output mapping #1 (extract_keywords.keywords → "
                     "agent.intermediate.keywords)", id="duplicate-path"),
        pytest.param([{**KEYWORDS, "to": "max_items"}], 0, "to",
                     "names declarative variable max_items", id="a-variable"),
        pytest.param([{**KEYWORDS, "tool": "world"}], 0, "tool",
                     "world is a namespace of the run's state", id="tool-named-world"),
    ],
)
def test_the_workflow_page_refuses_a_bad_mapping_on_its_field(
    staff_client: Client, generator: Workflow, mappings: list[dict[str, Any]], index: int,
    field: str, message: str,
) -> None:
    before = db_dump()
    data = page_data(staff_client, generator)
    for mapping in mappings:
        add_form(data, "outputs", **mapping)
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 200
    formset = next(f for f in response.context["inline_admin_formsets"]
                   if f.formset.prefix == "outputs").formset
    errors = formset.forms[index].errors
    assert any(message in error for error in errors.get(field, [])), errors
    row = mappings[index]
    named = f"outputs[{index}] ({row['tool']}.{row['field']} → {row['to']}).{field}: "
    assert any(label.startswith(named) for label in response.wsgi_request.workflow_check.labels)
    assert db_dump() == before and not OutputMapping.objects.exists()


SUMMARY = {"tool": "summarize", "field": "summary", "to": "world.summary"}


def _delete_the_first_row(data: dict[str, Any]) -> None:
    data["outputs-0-DELETE"] = "on"
    data["outputs-2-to"] = DOCUMENTS["to"]


def _move_the_last_row_first(data: dict[str, Any]) -> None:
    data["outputs-0-position"], data["outputs-2-position"] = "2", "0"
    data["outputs-0-to"] = SUMMARY["to"]


@pytest.mark.parametrize(
    ("edit", "prefix", "message"),
    [
        pytest.param(
            _delete_the_first_row, "outputs-2",
            "agent.final_result.documents is already written by output mapping #2 "
            "(search_documents.document_list → agent.final_result.documents): one mapping per path",
            id="a-row-deleted-above",
        ),
        pytest.param(
            _move_the_last_row_first, "outputs-0",
            "world.summary is already written by output mapping #1 (summarize.summary → "
            "world.summary): one mapping per path",
            id="rows-reordered",
        ),
    ],
)
def test_a_mapping_error_names_the_other_row_as_the_page_lists_it(
    staff_client: Client, example: dict[str, Any], edit: Any, prefix: str, message: str
) -> None:
    """The document's index of a mapping skips the rows a save deletes and follows the moved
    positions; the page's rows do not: the error sits on its row and names the other one by
    the page's numbering (deleted rows are still listed) and its fields."""
    services.workflow_import(
        name="Research", data=json.dumps({**example, "outputs": [KEYWORDS, DOCUMENTS, SUMMARY]})
    )
    workflow = Workflow.objects.get(name="Research")
    data = page_data(staff_client, workflow)
    edit(data)
    before = db_dump()
    response = staff_client.post(change_url(workflow), data)
    assert response.status_code == 200
    formset = next(f for f in response.context["inline_admin_formsets"]
                   if f.formset.prefix == "outputs").formset
    errors = {form.prefix: dict(form.errors) for form in formset.forms if form.errors}
    assert errors == {prefix: {"to": [message]}}
    assert db_dump() == before


# -- property: whatever the mappings, an import answers with a result or a ConfigError ----------
_piece = st.one_of(
    st.sampled_from(["agent", "world", "context", "max_items", "x", "1", "", " a", "a.b"]),
    st.text(max_size=12),
)
_path = st.lists(_piece, min_size=0, max_size=4).map(".".join)
_mapping = st.one_of(
    st.fixed_dictionaries({"tool": _piece, "field": _piece, "to": _path}),
    st.dictionaries(st.sampled_from(["tool", "field", "to", "from"]),
                    st.one_of(_piece, st.integers(), st.none()), max_size=4),
    st.integers(), st.none(),
)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(outputs=st.one_of(st.lists(_mapping, max_size=6), _piece, st.integers()))
def test_import_of_any_mappings_is_a_result_or_a_config_error(
    generator: Workflow, example: dict[str, Any], outputs: Any
) -> None:
    before = db_dump()
    try:
        services.workflow_import(name="Generator", data={**example, "outputs": outputs},
                                 replace=True, dry_run=True)
    except ConfigError as exc:
        assert exc.issues and all(issue.message for issue in exc.issues)
        # each names its field: the mapping's, or a variable's that a tool name collides with
        assert all(issue.path.startswith(("outputs", "context_variables.")) for issue in
                   exc.issues), exc.issues
    assert db_dump() == before
