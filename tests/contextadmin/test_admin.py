"""The workflow admin page: inlines, nested triggers, and every rule shown next to its field."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from contextadmin import selectors
from contextadmin.models import Trigger, Variable, Workflow
from tests.contextadmin.conftest import db_dump
from tests.contextadmin.formdata import add_form, form_data, new_workflow_data

pytestmark = pytest.mark.django_db


def change_url(workflow: Workflow) -> str:
    return reverse("admin:contextadmin_workflow_change", args=[workflow.pk])


def page_data(client: Client, workflow: Workflow) -> dict[str, Any]:
    response = client.get(change_url(workflow))
    assert response.status_code == 200
    data = form_data(response.content.decode())
    data["_continue"] = "Save and continue editing"
    return data


def forms_by_prefix(response: Any) -> dict[str, Any]:
    """Map each inline form's prefix to the form, nested trigger forms included."""
    found: dict[str, Any] = {}

    def visit(formset: Any) -> None:
        for form in formset.forms:
            found[form.prefix] = form
            for nested in getattr(form, "nested_formsets", []):
                visit(nested)

    for inline in response.context["inline_admin_formsets"]:
        visit(inline.formset)
    return found


def field_errors(response: Any, prefix: str, field: str) -> list[str]:
    form = forms_by_prefix(response)[prefix]
    return list(form.errors.get(field, [])) if field else list(form.non_field_errors())


def export(workflow: Workflow) -> dict[str, Any]:
    return json.loads(selectors.workflow_export(workflow=Workflow.objects.get(pk=workflow.pk)))


# -- pages ------------------------------------------------------------------------------------
def test_change_page_shows_every_category_and_the_buttons(
    staff_client: Client, generator: Workflow
) -> None:
    response = staff_client.get(change_url(generator))
    html = response.content.decode()
    for title in (
        "Declarative variables",
        "Database variables",
        "Environment variables",
        "Derived variables",
        "Hand-offs",
        "Triggers",
    ):
        assert title in html
    # The downloads are the version the page shows, named after the workflow and variant.
    download = f"/admin/contextadmin/workflow/{generator.pk}/history/1/context_variables.json"
    assert f'href="{download}" download="Generator.v1.context_variables.json"' in html
    assert (
        f'href="{download}?environment=production" '
        'download="Generator.v1.production.context_variables.json"'
    ) in html
    assert f'href="/admin/contextadmin/workflow/{generator.pk}/import/"' in html
    assert 'href="/workflows/Generator/preview/"' in html
    assert ">Download Generator.v1.context_variables.json<" in html
    assert ">Download production variant<" in html
    assert ">Import…<" in html
    assert ">Open context preview in inspector<" in html
    assert f'href="/admin/contextadmin/workflow/{generator.pk}/history/"' in html


def test_each_category_form_shows_only_its_own_fields(
    staff_client: Client, generator: Workflow
) -> None:
    forms = forms_by_prefix(staff_client.get(change_url(generator)))
    own = {
        prefix: set(forms[f"{prefix}-0"].fields)
        - {"id", "workflow", "variable", "position", "DELETE"}
        for prefix in (
            "declarative_variables",
            "database_variables",
            "environment_variables",
            "derived_variables",
            "derived_variables-0-triggers",
            "handoffs",
        )
        if f"{prefix}-0" in forms
    }
    assert own == {
        "declarative_variables": {"name", "type", "value", "description"},
        # a variable's own fields, then where its value is looked up
        "database_variables": {"name", "type", "description"}
        | {"database_name", "collection", "search_by", "field"},
        "environment_variables": {"name", "type", "env_var", "default", "description"},
        "derived_variables": {"name", "description", "default"},
        # a trigger row: its type, then agent_text's, agent_turn_count's and tool_response's
        "derived_variables-0-triggers": {"type"}
        | {"agent", "equals", "case_sensitive", "trim"}
        | {"count"}
        | {"tool", "status"},
    }


def test_resubmitting_the_page_unchanged_keeps_the_definitions(
    staff_client: Client, generator: Workflow, example_bytes: bytes
) -> None:
    before = selectors.workflow_export(workflow=generator)
    response = staff_client.post(change_url(generator), page_data(staff_client, generator))
    assert response.status_code == 302, response.context and response.context["errors"]
    assert selectors.workflow_export(workflow=generator) == before


def test_add_workflow_with_every_inline_and_a_nested_trigger(staff_client: Client) -> None:
    data = new_workflow_data("Support", database_name="support_db", description="Tickets")
    add_form(data, "declarative_variables", name="greeting", type="string", value="Grüß Gott ✓")
    add_form(data, "declarative_variables", name="ratio", type="number", value="2.5")
    add_form(
        data,
        "database_variables",
        name="plan",
        type="string",
        collection="Accounts",
        search_by="enterprise_id",
        field="billing.plan",
    )
    add_form(
        data,
        "environment_variables",
        name="beta_enabled",
        type="boolean",
        env_var="BETA_ENABLED",
        default="false",
    )
    derived = add_form(data, "derived_variables", name="triaged", description="Triage done")
    add_form(
        data,
        f"{derived}-triggers",
        type="agent_text",
        agent="TriageAgent",
        equals="TRIAGED",
        trim=True,
    )
    add_form(
        data,
        f"{derived}-triggers",
        type="agent_turn_count",
        agent="TriageAgent",
        count=5,
        trim=True,
    )
    add_form(
        data,
        f"{derived}-triggers",
        type="tool_response",
        tool="close_ticket",
        status="success",
        trim=True,
    )
    add_form(
        data,
        "handoffs",
        source_agent="TriageAgent",
        target_agent="SupportAgent",
        condition="${triaged} and ${beta_enabled}",
        description="",
    )

    response = staff_client.post(reverse("admin:contextadmin_workflow_add"), data)

    assert response.status_code == 302, response.context and response.context["errors"]
    workflow = Workflow.objects.get(name="Support")
    assert workflow.description == "Tickets"
    assert export(workflow) == {
        "context_variables": {
            "database_name": "support_db",
            "declarative_variables": [
                {"name": "greeting", "type": "string", "description": "", "value": "Grüß Gott ✓"},
                {"name": "ratio", "type": "number", "description": "", "value": 2.5},
            ],
            "database_variables": [
                {
                    "name": "plan",
                    "type": "string",
                    "description": "",
                    "source": {
                        "type": "database",
                        "collection": "Accounts",
                        "search_by": "enterprise_id",
                        "field": "billing.plan",
                    },
                }
            ],
            "environment_variables": [
                {
                    "name": "beta_enabled",
                    "type": "boolean",
                    "description": "",
                    "source": {"type": "environment", "env_var": "BETA_ENABLED"},
                    "default": False,
                }
            ],
            "derived_variables": [
                {
                    "name": "triaged",
                    "type": "boolean",
                    "description": "Triage done",
                    "default": False,
                    "triggers": [
                        {
                            "type": "agent_text",
                            "agent": "TriageAgent",
                            "match": {"equals": "TRIAGED"},
                        },
                        {"type": "agent_turn_count", "agent": "TriageAgent", "count": 5},
                        {"type": "tool_response", "tool": "close_ticket", "status": "success"},
                    ],
                }
            ],
        },
        "handoffs": [
            {
                "source_agent": "TriageAgent",
                "target_agent": "SupportAgent",
                "condition": "${triaged} and ${beta_enabled}",
                "description": "",
            }
        ],
    }


def test_add_a_derived_variable_with_a_trigger_on_the_workflow_page(
    staff_client: Client, generator: Workflow
) -> None:
    data = page_data(staff_client, generator)
    derived = add_form(data, "derived_variables", name="review_done", default=True)
    add_form(
        data,
        f"{derived}-triggers",
        type="agent_text",
        agent="ReviewAgent",
        equals="Done",
        case_sensitive=True,
    )  # trim unticked: exact match

    response = staff_client.post(change_url(generator), data)

    assert response.status_code == 302, response.context and response.context["errors"]
    derived_list = export(generator)["context_variables"]["derived_variables"]
    assert derived_list[1] == {
        "name": "review_done",
        "type": "boolean",
        "description": "",
        "default": True,
        "triggers": [
            {
                "type": "agent_text",
                "agent": "ReviewAgent",
                "match": {"equals": "Done", "case_sensitive": True, "trim": False},
            }
        ],
    }


def test_positions_set_the_export_order(staff_client: Client, generator: Workflow) -> None:
    data = page_data(staff_client, generator)
    data["declarative_variables-0-position"], data["declarative_variables-1-position"] = "1", "0"
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 302
    names = [v["name"] for v in export(generator)["context_variables"]["declarative_variables"]]
    assert names == ["max_items", "product_tier"]


def test_swapping_two_names_saves(staff_client: Client, generator: Workflow) -> None:
    data = page_data(staff_client, generator)
    data["declarative_variables-0-name"], data["declarative_variables-1-name"] = (
        "max_items",
        "product_tier",
    )
    data["declarative_variables-0-type"], data["declarative_variables-1-type"] = "integer", "string"
    data["declarative_variables-0-value"], data["declarative_variables-1-value"] = "25", "beta"
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 302, response.context and response.context["errors"]
    declared = export(generator)["context_variables"]["declarative_variables"]
    assert [(v["name"], v["value"]) for v in declared] == [
        ("max_items", 25),
        ("product_tier", "beta"),
    ]


def test_moving_a_name_to_another_category_in_one_save(
    staff_client: Client, generator: Workflow
) -> None:
    data = page_data(staff_client, generator)
    data["declarative_variables-0-DELETE"] = "on"  # product_tier leaves declarative ...
    add_form(
        data, "environment_variables", name="product_tier", type="string", env_var="PRODUCT_TIER"
    )
    response = staff_client.post(change_url(generator), data)  # ... and becomes environment
    assert response.status_code == 302, response.context and response.context["errors"]
    section = export(generator)["context_variables"]
    assert [v["name"] for v in section["declarative_variables"]] == ["max_items"]
    assert section["environment_variables"][-1]["source"]["env_var"] == "PRODUCT_TIER"


def test_deleting_a_derived_variable_deletes_its_triggers(
    staff_client: Client, generator: Workflow
) -> None:
    data = page_data(staff_client, generator)
    data["derived_variables-0-DELETE"] = "on"
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 302
    assert not Variable.objects.filter(category="derived").exists()
    assert not Trigger.objects.exists()


def test_deleting_a_workflow_deletes_its_definitions(
    staff_client: Client, generator: Workflow
) -> None:
    url = reverse("admin:contextadmin_workflow_delete", args=[generator.pk])
    confirm = staff_client.get(url)
    assert confirm.status_code == 200
    assert not confirm.context["perms_lacking"]
    response = staff_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not Workflow.objects.exists()
    assert not Variable.objects.exists() and not Trigger.objects.exists()


# -- rules: each one shown next to the offending field, nothing saved ---------------------------
HANDOFF = "__handoff__"
OUTPUTS = "__outputs__"  # output mappings added in this order: at least two, so a wrong row shows
KEYWORDS = {"tool": "extract_keywords", "field": "keywords", "to": "agent.intermediate.keywords"}
DOCUMENTS = {"tool": "search_documents", "field": "document_list", "to": "agent.documents"}
KEYWORDS_ROW = "output mapping #1 (extract_keywords.keywords → agent.intermediate.keywords)"

ADMIN_RULES = [
    pytest.param(
        {"declarative_variables-0-name": "ProductTier"},
        "declarative_variables-0",
        "name",
        "lower_snake_case",
        id="name-not-lower-snake-case",
    ),
    pytest.param(
        {"declarative_variables-0-name": "enterprise_id"},
        "declarative_variables-0",
        "name",
        "reserved",
        id="name-reserved-enterprise-id",
    ),
    pytest.param(
        {"environment_variables-1-name": "workflow_name"},
        "environment_variables-1",
        "name",
        "reserved",
        id="name-reserved-workflow-name",
    ),
    pytest.param(
        {"database_variables-0-name": "product_tier"},
        "database_variables-0",
        "name",
        "already declared at declarative variable #1",
        id="name-duplicate-across-categories",
    ),
    pytest.param(
        {"declarative_variables-1-name": "product_tier"},
        "declarative_variables-1",
        "name",
        "already declared",
        id="name-duplicate-in-category",
    ),
    pytest.param(
        {"derived_variables-0-triggers-0-agent": "product_tier"},
        "declarative_variables-0",
        "name",
        "also an agent name",
        id="name-equals-trigger-agent",
    ),
    pytest.param(
        {
            HANDOFF: {
                "source_agent": "context_aware",
                "target_agent": "B",
                "condition": "${interview_complete}",
            }
        },
        "environment_variables-0",
        "name",
        "also an agent name",
        id="name-equals-handoff-agent",
    ),
    pytest.param(
        {"declarative_variables-1-value": "many"},
        "declarative_variables-1",
        "value",
        "must be an integer",
        id="declarative-value-not-integer",
    ),
    pytest.param(
        {"declarative_variables-0-type": "boolean", "declarative_variables-0-value": "yes"},
        "declarative_variables-0",
        "value",
        "must be a boolean",
        id="declarative-value-not-boolean",
    ),
    pytest.param(
        {"declarative_variables-0-type": "number", "declarative_variables-0-value": "NaN"},
        "declarative_variables-0",
        "value",
        "must be a number",
        id="declarative-value-not-finite",
    ),
    pytest.param(
        {"declarative_variables-1-value": ""},
        "declarative_variables-1",
        "value",
        "got null",
        id="declarative-value-missing",
    ),
    pytest.param(
        {"declarative_variables-0-value": "x" * 1001},
        "declarative_variables-0",
        "value",
        "at most 1000",
        id="declarative-value-too-large",
    ),
    pytest.param(
        {"database_variables-0-collection": ""},
        "database_variables-0",
        "collection",
        "field required",
        id="database-collection-required",
    ),
    pytest.param(
        {"database_variables-0-search_by": ""},
        "database_variables-0",
        "search_by",
        "field required",
        id="database-search-by-required",
    ),
    pytest.param(
        {"database_variables-0-field": ""},
        "database_variables-0",
        "field",
        "field required",
        id="database-field-required",
    ),
    pytest.param(
        {"database_variables-0-database_name": "", "database_name": ""},
        "database_variables-0",
        "database_name",
        "set it here or in the workflow's Database name",
        id="database-name-required-somewhere",
    ),
    pytest.param(
        {"environment_variables-0-env_var": "OPENAI_API_KEY"},
        "environment_variables-0",
        "env_var",
        "looks like a secret",
        id="env-var-secret-key",
    ),
    pytest.param(
        {"environment_variables-0-env_var": "DB_PASSWORD"},
        "environment_variables-0",
        "env_var",
        "never echo secret env vars",
        id="env-var-secret-password",
    ),
    pytest.param(
        {"environment_variables-0-env_var": "GITHUB_TOKEN"},
        "environment_variables-0",
        "env_var",
        "anti-pattern",
        id="env-var-secret-token",
    ),
    pytest.param(
        {"environment_variables-0-env_var": "context-aware"},
        "environment_variables-0",
        "env_var",
        "environment variable name",
        id="env-var-pattern",
    ),
    pytest.param(
        {"environment_variables-0-env_var": ""},
        "environment_variables-0",
        "env_var",
        "field required",
        id="env-var-required",
    ),
    pytest.param(
        {"environment_variables-0-default": "maybe"},
        "environment_variables-0",
        "default",
        "must be a boolean",
        id="env-default-type",
    ),
    pytest.param(
        {"derived_variables-0-triggers-0-agent": ""},
        "derived_variables-0-triggers-0",
        "agent",
        "field required",
        id="trigger-agent-required",
    ),
    pytest.param(
        {"derived_variables-0-triggers-0-equals": ""},
        "derived_variables-0-triggers-0",
        "equals",
        "at least 1 character",
        id="trigger-equals-empty",
    ),
    pytest.param(
        {"derived_variables-0-triggers-0-equals": "   "},  # the form strips it: empty
        "derived_variables-0-triggers-0",
        "equals",
        "at least 1 character",
        id="trigger-equals-blank-trimmed",
    ),
    pytest.param(
        {"derived_variables-0-triggers-0-count": "3"},
        "derived_variables-0-triggers-0",
        "count",
        "not used by agent_text triggers",
        id="trigger-field-not-used-by-type",
    ),
    pytest.param(
        {
            "derived_variables-0-triggers-0-type": "agent_turn_count",
            "derived_variables-0-triggers-0-equals": "",
        },
        "derived_variables-0-triggers-0",
        "count",
        "field required",
        id="turn-count-needs-count",
    ),
    pytest.param(
        {
            "derived_variables-0-triggers-0-type": "agent_turn_count",
            "derived_variables-0-triggers-0-equals": "",
            "derived_variables-0-triggers-0-count": "0",
        },
        "derived_variables-0-triggers-0",
        "count",
        "greater than or equal to 1",
        id="turn-count-at-least-one",
    ),
    pytest.param(
        {
            "derived_variables-0-triggers-0-type": "agent_turn_count",
            "derived_variables-0-triggers-0-equals": "",
            "derived_variables-0-triggers-0-count": "-3",
        },
        "derived_variables-0-triggers-0",
        "count",
        "greater than or equal to 1",  # the format's bound, as for 0 (the column's is 0)
        id="turn-count-negative",
    ),
    pytest.param(
        {
            "derived_variables-0-triggers-0-type": "agent_turn_count",
            "derived_variables-0-triggers-0-equals": "",
            "derived_variables-0-triggers-0-count": "1000001",
        },
        "derived_variables-0-triggers-0",
        "count",
        "less than or equal to 1000000",
        id="turn-count-at-most-a-million",
    ),
    pytest.param(
        {
            "derived_variables-0-triggers-0-type": "tool_response",
            "derived_variables-0-triggers-0-agent": "",
            "derived_variables-0-triggers-0-equals": "",
        },
        "derived_variables-0-triggers-0",
        "tool",
        "field required",
        id="tool-response-needs-tool",
    ),
    pytest.param(
        {
            HANDOFF: {
                "source_agent": "A",
                "target_agent": "B",
                "condition": "${interview_complete} or ${context_aware}",
            }
        },
        "handoffs-0",
        "condition",
        '"or" is not allowed',
        id="condition-or",
    ),
    pytest.param(
        {
            HANDOFF: {
                "source_agent": "A",
                "target_agent": "B",
                "condition": "not ${interview_complete}",
            }
        },
        "handoffs-0",
        "condition",
        '"not" is not allowed',
        id="condition-not",
    ),
    pytest.param(
        {
            HANDOFF: {
                "source_agent": "A",
                "target_agent": "B",
                "condition": "!${interview_complete}",
            }
        },
        "handoffs-0",
        "condition",
        "positive",
        id="condition-bang",
    ),
    pytest.param(
        {
            HANDOFF: {
                "source_agent": "A",
                "target_agent": "B",
                "condition": "${interview_complete} == true",
            }
        },
        "handoffs-0",
        "condition",
        "comparisons are not allowed",
        id="condition-comparison",
    ),
    pytest.param(
        {
            HANDOFF: {
                "source_agent": "A",
                "target_agent": "B",
                "condition": "${context_aware} and ${monetization_enabled}"
                " and ${interview_complete}",
            }
        },
        "handoffs-0",
        "condition",
        'at most one "and"',
        id="condition-two-ands",
    ),
    pytest.param(
        {HANDOFF: {"source_agent": "A", "target_agent": "B", "condition": "${product_tier}"}},
        "handoffs-0",
        "condition",
        "declarative variable product_tier cannot route",
        id="condition-declarative",
    ),
    pytest.param(
        {HANDOFF: {"source_agent": "A", "target_agent": "B", "condition": "${concept_overview}"}},
        "handoffs-0",
        "condition",
        "database variable concept_overview cannot route",
        id="condition-database",
    ),
    pytest.param(
        {HANDOFF: {"source_agent": "A", "target_agent": "B", "condition": "${nope}"}},
        "handoffs-0",
        "condition",
        "unknown variable nope",
        id="condition-unknown-variable",
    ),
    pytest.param(
        {OUTPUTS: [{**KEYWORDS, "to": "nodes.keywords"}, DOCUMENTS]},
        "outputs-0",
        "to",
        "nodes is a namespace the run writes itself",
        id="output-namespace-first-row",
    ),
    pytest.param(
        {OUTPUTS: [KEYWORDS, {**DOCUMENTS, "to": "execution.documents"}]},
        "outputs-1",
        "to",
        "execution is a namespace the run writes itself",
        id="output-namespace-second-row",
    ),
    pytest.param(
        {OUTPUTS: [KEYWORDS, {**DOCUMENTS, "to": "context.max_items"}]},
        "outputs-1",
        "to",
        "names declarative variable max_items",
        id="output-writes-a-variable",
    ),
    pytest.param(
        {OUTPUTS: [KEYWORDS, {**DOCUMENTS, "tool": "world"}]},
        "outputs-1",
        "tool",
        "world is a namespace of the run's state",
        id="output-tool-named-world",
    ),
    pytest.param(
        {OUTPUTS: [KEYWORDS, {**DOCUMENTS, "to": KEYWORDS["to"]}]},
        "outputs-1",
        "to",
        f"agent.intermediate.keywords is already written by {KEYWORDS_ROW}: one mapping per path",
        id="output-path-written-twice",
    ),
    pytest.param(
        {OUTPUTS: [KEYWORDS, {**DOCUMENTS, "to": "agent.intermediate.keywords.top"}]},
        "outputs-1",
        "to",
        f"is inside agent.intermediate.keywords, which {KEYWORDS_ROW} writes",
        id="output-path-inside-another",
    ),
    pytest.param(
        {OUTPUTS: [KEYWORDS, {**DOCUMENTS, "to": "agent.intermediate"}]},
        "outputs-1",
        "to",
        f"agent.intermediate holds the path {KEYWORDS_ROW} writes",
        id="output-path-above-another",
    ),
]


def _row_the_edits_leave(data: dict[str, Any], edits: dict[str, Any], prefix: str) -> str:
    """A variable row neither edited nor named by ``edits`` (product_tier in a condition)."""
    touched = {prefix, *(key.rsplit("-", 1)[0] for key in edits if key not in (HANDOFF, OUTPUTS))}
    named = str(edits)
    return next(
        row
        for row in ("declarative_variables-1", "declarative_variables-0", "database_variables-0")
        if row not in touched and f"{row}-name" in data and data[f"{row}-name"] not in named
    )


@pytest.mark.parametrize("deleting", [False, True], ids=["alone", "with-a-deletion"])
@pytest.mark.parametrize(("edits", "prefix", "field", "message"), ADMIN_RULES)
def test_rule_is_enforced_next_to_the_field(
    staff_client: Client,
    generator: Workflow,
    edits: dict[str, Any],
    prefix: str,
    field: str,
    message: str,
    deleting: bool,
) -> None:
    """Each rule refuses the save next to its field, also when the same save deletes a row
    (nested_admin then cleans every form a second time: the page's check must still hold).
    An output mapping's error is on its own row alone, naming other rows as the page does."""
    data = page_data(staff_client, generator)
    for key, value in edits.items():
        if key == HANDOFF:
            add_form(data, "handoffs", description="", **value)
        elif key == OUTPUTS:
            for mapping in value:
                add_form(data, "outputs", **mapping)
        else:
            data[key] = value
    if deleting:
        data[f"{_row_the_edits_leave(data, edits, prefix)}-DELETE"] = "on"
    before = db_dump()

    response = staff_client.post(change_url(generator), data)

    assert response.status_code == 200, "the page must be shown again with the error"
    errors = field_errors(response, prefix, field)
    assert any(message in error for error in errors), errors
    assert not any("outputs[" in error for error in errors), "a 0-based index of the document"
    other_rows = {
        row: form.errors
        for row, form in forms_by_prefix(response).items()
        if row.startswith("outputs-") and row != prefix and form.errors
    }
    assert not other_rows, other_rows
    assert db_dump() == before


def test_errors_are_rendered_beside_the_input(staff_client: Client, generator: Workflow) -> None:
    data = page_data(staff_client, generator)
    data["environment_variables-0-env_var"] = "STRIPE_SECRET"
    data["derived_variables-0-triggers-0-agent"] = ""
    html = staff_client.post(change_url(generator), data).content.decode()

    def cell(name: str) -> str:
        field = name.rsplit("-", 1)[1]
        pattern = (
            rf'<td class="[^"]*\bfield-{field}">((?:(?!</td>).)*name="{name}"(?:(?!</td>).)*)</td>'
        )
        match = re.search(pattern, html, re.S)
        assert match, f"no cell holds {name}"
        return match.group(1)

    env_cell = cell("environment_variables-0-env_var")
    assert 'class="errorlist' in env_cell and "STRIPE_SECRET looks like a secret" in env_cell
    agent_cell = cell("derived_variables-0-triggers-0-agent")
    assert 'class="errorlist' in agent_cell and "field required" in agent_cell
    assert "Please correct the errors below." in html


def test_field_errors_and_document_rules_are_reported_in_one_pass(
    staff_client: Client, generator: Workflow
) -> None:
    """Issue 16: a field error no longer hides duplicate names or condition rules."""
    data = page_data(staff_client, generator)
    data["declarative_variables-0-type"] = "text"  # not a choice: a form error
    data["declarative_variables-1-value"] = "many"  # a schema field error
    data["database_variables-0-name"] = "product_tier"  # a rule across the document
    add_form(
        data,
        "handoffs",
        source_agent="InterviewAgent",
        target_agent="PlannerAgent",
        condition="${interview_complete} or ${context_aware}",
        description="",
    )
    before = db_dump()
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 200
    assert field_errors(response, "declarative_variables-0", "type")
    assert field_errors(response, "declarative_variables-1", "value")
    assert field_errors(response, "database_variables-0", "name") == [
        "product_tier is already declared at declarative variable #1"
    ]
    assert any("or" in e for e in field_errors(response, "handoffs-0", "condition"))
    summary = response.context["document_issues"]
    assert "declarative_variables[1] (max_items).value: must be an integer" in "\n".join(summary)
    assert any(
        line.startswith("declarative_variables[0] (product_tier).type: ") for line in summary
    )
    assert any(line.startswith("database_variables[0] (product_tier).name: ") for line in summary)
    assert any(
        line.startswith("handoffs[0] (InterviewAgent → PlannerAgent).condition: ")
        for line in summary
    )
    assert 'id="document-issues"' in response.content.decode()
    assert db_dump() == before


def test_several_errors_are_reported_at_once(staff_client: Client, generator: Workflow) -> None:
    data = page_data(staff_client, generator)
    data["environment_variables-0-env_var"] = "API_KEY"
    data["database_variables-0-collection"] = ""
    response = staff_client.post(change_url(generator), data)
    assert field_errors(response, "environment_variables-0", "env_var")
    assert field_errors(response, "database_variables-0", "collection")


def test_add_page_rejects_a_bad_workflow_name(staff_client: Client) -> None:
    response = staff_client.post(
        reverse("admin:contextadmin_workflow_add"), new_workflow_data("9 lives")
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["name"]
    assert not Workflow.objects.exists()


# -- list pages -------------------------------------------------------------------------------
def test_workflow_list_searches(staff_client: Client, generator: Workflow) -> None:
    Workflow.objects.create(name="Other", description="unrelated")
    html = staff_client.get(
        reverse("admin:contextadmin_workflow_changelist"), {"q": "Gener"}
    ).content.decode()
    assert "Generator" in html and ">Other<" not in html
    assert "Import context_variables.json…" in html


@pytest.mark.parametrize(
    ("query", "present", "absent"),
    [
        pytest.param(
            {"category__exact": "derived"}, ["interview_complete"], ["product_tier"], id="category"
        ),
        pytest.param({"type__exact": "integer"}, ["max_items"], ["product_tier"], id="type"),
        pytest.param({"q": "CONTEXT_AWARE"}, ["context_aware"], ["max_items"], id="search-env-var"),
    ],
)
def test_variable_list_filters_and_searches(
    staff_client: Client,
    generator: Workflow,
    query: dict[str, str],
    present: list[str],
    absent: list[str],
) -> None:
    response = staff_client.get(reverse("admin:contextadmin_variable_changelist"), query)
    html = response.content.decode()
    assert response.status_code == 200
    for name in present:
        assert f">{name}<" in html
    for name in absent:
        assert f">{name}<" not in html


def test_variable_list_filters_by_workflow(staff_client: Client, generator: Workflow) -> None:
    other = Workflow.objects.create(name="Other")
    Variable.objects.create(workflow=other, category="declarative", name="elsewhere", value="x")
    html = staff_client.get(
        reverse("admin:contextadmin_variable_changelist"), {"workflow__id__exact": other.pk}
    ).content.decode()
    assert ">elsewhere<" in html and ">product_tier<" not in html


def test_variables_are_edited_only_through_their_workflow(
    staff_client: Client, generator: Workflow
) -> None:
    assert staff_client.get(reverse("admin:contextadmin_variable_add")).status_code == 403
    variable = Variable.objects.get(name="product_tier")
    url = reverse("admin:contextadmin_variable_change", args=[variable.pk])
    assert staff_client.get(url).status_code == 200  # view only
    assert staff_client.post(url, {"name": "changed"}).status_code == 403


@pytest.mark.parametrize("name", ["trigger", "handoff"])
def test_trigger_and_handoff_lists(staff_client: Client, generator: Workflow, name: str) -> None:
    assert staff_client.get(reverse(f"admin:contextadmin_{name}_changelist")).status_code == 200


def test_admin_needs_a_staff_login(client: Client, generator: Workflow) -> None:
    response = client.get(change_url(generator))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.parametrize(
    "row_id",
    ["abc", "1e5", "1" * 30, "99999999999999999999", "-1", "0", "99999"],
    ids=["letters", "exponent", "30-digits", "past-64-bit", "negative", "zero", "no-such-row"],
)
@pytest.mark.parametrize(
    "key",
    ["declarative_variables-0-id", "derived_variables-0-triggers-0-id"],
    ids=["row", "trigger"],
)
def test_a_row_id_that_names_no_stored_row_is_said_above_its_list_and_nothing_is_saved(
    staff_client: Client, generator: Workflow, key: str, row_id: str
) -> None:
    """nested_admin queried with the posted ids as given: letters or an id past the database's
    integers was a 500, and an unknown id an error on a hidden field nobody could see."""
    data = page_data(staff_client, generator)
    data[key] = row_id
    data["declarative_variables-1-value"] = "edited"
    before = db_dump()
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 200
    page = response.content.decode()
    assert re.search(r"row 1 \([a-z_ #0-9]+\): its id is not a stored row of this list", page)
    assert "tick its Delete box to let it go" in page  # what was typed stays on the page
    assert db_dump() == before


# -- property: whatever an operator types, the page answers (no 500) and saves only valid data --
_EDITABLE = [
    "declarative_variables-0-name",
    "declarative_variables-1-value",
    "declarative_variables-0-type",
    "database_variables-0-collection",
    "environment_variables-0-env_var",
    "environment_variables-1-default",
    "derived_variables-0-triggers-0-type",
    "derived_variables-0-triggers-0-agent",
    "derived_variables-0-triggers-0-count",
    "derived_variables-0-position",
    "declarative_variables-0-id",
    "derived_variables-0-triggers-0-id",
]


@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # each example is a page round trip
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(edits={"derived_variables-0-position": ":"})
@example(edits={"declarative_variables-1-value": "9" * 5000})
@example(
    edits={"declarative_variables-0-type": "number", "declarative_variables-0-value": "9" * 5000}
)
@example(
    edits={"declarative_variables-0-type": "text", "derived_variables-0-triggers-0-count": "-1"}
)
@given(
    edits=st.dictionaries(
        st.sampled_from(_EDITABLE),
        st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=30)
        | st.sampled_from(["", "0", "-1", "true", "agent_text", "tool_response", "1e400", "${x}"]),
        min_size=1,
        max_size=4,
    )
)
def test_any_input_is_answered_and_only_valid_definitions_are_saved(
    staff_client: Client, generator: Workflow, edits: dict[str, str]
) -> None:
    data = page_data(staff_client, generator)
    data.update(edits)
    response = staff_client.post(change_url(generator), data)
    assert response.status_code in (200, 302)
    selectors.workflow_config(workflow=generator)  # what is stored is always valid


def test_staff_with_workflow_permissions_edits_the_inlines(generator: Workflow) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    user = get_user_model().objects.create_user("editor", password="x", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_workflow", "change_workflow"])
    )
    client = Client()
    client.force_login(user)
    data = page_data(client, generator)
    assert "derived_variables-0-triggers-0-agent" in data, "the nested inline is editable"
    add_form(
        data, "handoffs", source_agent="A", target_agent="B", condition="${interview_complete}"
    )
    response = client.post(change_url(generator), data)
    assert response.status_code == 302
    assert export(generator)["handoffs"][0]["target_agent"] == "B"
    assert client.get(reverse("admin:contextadmin_variable_changelist")).status_code == 200
    assert client.get(IMPORT_URL_NEW).status_code == 403  # adding workflows needs add_workflow


IMPORT_URL_NEW = "/admin/contextadmin/workflow/import/"


def test_admin_lists_write_times_as_the_inspector_does(
    staff_client: Client, generator: Workflow
) -> None:
    """Issue 22's walk: the admin wrote "Nov. 25, 2026, 6:43 a.m." beside the inspector's
    "2026-11-25 06:43:31 UTC"; one form everywhere, in UTC and saying so."""
    import re

    page = staff_client.get("/admin/contextadmin/workflowversion/").content.decode()
    assert re.search(r">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<", page), page[-3000:]
    assert " a.m." not in page and " p.m." not in page
