"""An operator's day on the workflow page (round 3): every issue of a save at once, a row the
other operator deleted, the page of a staff user who may only view, and version actions
reached by a plain link."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from contextadmin import selectors
from contextadmin.models import Workflow
from tests.contextadmin.conftest import db_dump
from tests.contextadmin.formdata import add_form, form_data
from tests.contextadmin.test_admin import change_url, field_errors, forms_by_prefix, page_data

pytestmark = pytest.mark.django_db


def test_one_save_shows_every_issue_of_a_row_not_only_the_first(
    staff_client: Client, generator: Workflow
) -> None:
    """A row the check finds wrong in two places said only the first: the operator fixed it,
    saved, and was told the next one (four saves for a new workflow's four mistakes)."""
    data = page_data(staff_client, generator)
    data["declarative_variables-1-name"] = "MaxItems"  # declarative_variables-1 is max_items
    data["declarative_variables-1-value"] = "many"
    data["database_variables-0-search_by"] = ""
    data["database_variables-0-field"] = ""
    add_form(
        data,
        "handoffs",
        source_agent="InterviewAgent",
        target_agent="PlannerAgent",
        condition="${interview_done} and ${context_awre}",
        description="",
    )
    before = db_dump()
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 200
    assert field_errors(response, "declarative_variables-1", "name")
    assert field_errors(response, "declarative_variables-1", "value") == [
        "must be an integer (the declared type), got a string"
    ]
    assert field_errors(response, "database_variables-0", "search_by") == ["field required"]
    assert field_errors(response, "database_variables-0", "field") == ["field required"]
    summary = "\n".join(response.context["document_issues"])
    assert "declarative_variables[1] (MaxItems).value: must be an integer" in summary
    assert "database_variables[0] (concept_overview).source.field: field required" in summary
    assert db_dump() == before

    # the structure fixed, both unknown names of the one condition are said at once
    data = page_data(staff_client, generator)
    add_form(
        data,
        "handoffs",
        source_agent="InterviewAgent",
        target_agent="PlannerAgent",
        condition="${interview_done} and ${context_awre}",
        description="",
    )
    response = staff_client.post(change_url(generator), data)
    condition = field_errors(response, "handoffs-0", "condition")
    assert [message.split(":")[0] for message in condition] == [
        "unknown variable interview_done",
        "unknown variable context_awre",
    ]
    assert db_dump() == before


def exported(workflow: Workflow) -> dict[str, Any]:
    return json.loads(selectors.workflow_export(workflow=Workflow.objects.get(pk=workflow.pk)))


def other_client(username: str) -> Client:
    client = Client()
    client.force_login(
        get_user_model().objects.create_superuser(username, f"{username}@example.com", "pw-pw-1")
    )
    return client


def row_keys(data: dict[str, Any], category: str, name: str) -> str:
    """The post prefix of the variable called ``name`` (``declarative_variables-0-``)."""
    for key, value in data.items():
        if key.startswith(category) and key.endswith("-name") and value == name:
            return key.removesuffix("name")
    raise KeyError(name)


def test_a_row_the_other_operator_deleted_stays_on_the_refused_page_with_what_was_typed(
    staff_client: Client, generator: Workflow
) -> None:
    """A stale save whose row the other save deleted: the admin paired rows with stored rows by
    place, so that row (and what was typed into it) left the page, every later row took another's
    title, and each save after was refused on fields of a row nobody could see."""
    colleague = other_client("colleague")
    tab_a = page_data(colleague, generator)
    tab_b = page_data(staff_client, generator)
    tab_a[row_keys(tab_a, "declarative", "product_tier") + "DELETE"] = "on"
    assert colleague.post(change_url(generator), tab_a).status_code == 302

    tier, items = (
        row_keys(tab_b, "declarative", "product_tier"),
        row_keys(tab_b, "declarative", "max_items"),
    )
    tab_b[tier + "value"] = "typed by B"
    tab_b[items + "value"] = "40"
    refused = staff_client.post(change_url(generator), tab_b)

    assert refused.status_code == 200
    html = refused.content.decode()
    assert "version 2 was saved by colleague" in html
    again = form_data(html)
    assert again[tier + "value"] == "typed by B"  # the row is still on the page
    assert again[items + "value"] == "40"
    forms = forms_by_prefix(refused)
    gone = forms[tier.rstrip("-")]
    assert "tick its Delete box to let it go" in " ".join(gone.non_field_errors())
    # each row under its own title (the admin's original), none under another's
    titles = re.findall(r'<td class="original[^"]*">\s*<p>\s*([a-z_]+)', html)
    assert titles[:2] == ["product_tier", "max_items"]

    # letting the row go saves the rest, and keeps the other operator's deletion
    again[tier + "DELETE"] = "on"
    again["_continue"] = "Save and continue editing"
    assert staff_client.post(change_url(generator), again).status_code == 302
    declared = exported(generator)["context_variables"]["declarative_variables"]
    assert [(v["name"], v["value"]) for v in declared] == [("max_items", 40)]


def test_two_rows_posted_at_one_position_are_answered_not_a_500(
    staff_client: Client, generator: Workflow
) -> None:
    """nested_admin sorts the page's rows by position and cannot order two of the same one: a
    refused save with such rows (a stale merge gives them) was a 500."""
    data = page_data(staff_client, generator)
    data["declarative_variables-1-position"] = data["declarative_variables-0-position"]
    data["declarative_variables-1-value"] = "many"
    before = db_dump()
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 200
    assert field_errors(response, "declarative_variables-1", "value")
    assert db_dump() == before


def test_a_staff_user_who_may_only_view_sees_the_definitions_not_the_editing_machinery(
    client: Client, generator: Workflow
) -> None:
    """nested_admin printed each row's hidden order field as the dict that describes it, the
    page offered an Import… that answered 403, and showed "Version comment: None"."""
    viewer = get_user_model().objects.create_user("vera", password="pw-pw-1", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_workflow"))
    client.force_login(viewer)
    response = client.get(change_url(generator))
    assert response.status_code == 200
    html = response.content.decode()
    assert "is_hidden" not in html and "Order within the category" not in html
    assert "Import…" not in html
    assert "Version comment" not in html and "Change note" not in html
    assert "max_items" in html and "interview_complete" in html  # the definitions are shown
    history = reverse("admin:contextadmin_workflow_history", args=[generator.pk])
    assert client.get(history).status_code == 200


@pytest.mark.parametrize("action", ["revert", "approve"])
def test_a_version_action_reached_by_a_link_shows_history_instead_of_403(
    staff_client: Client, generator: Workflow, action: str
) -> None:
    """A revert posted after the session expired comes back from the login page as a GET of the
    revert's address: that was a bare 403 Forbidden. History shows it (and asks first)."""
    data = page_data(staff_client, generator)
    data["declarative_variables-1-value"] = "30"
    assert staff_client.post(change_url(generator), data).status_code == 302
    before = db_dump()
    url = reverse(f"admin:contextadmin_workflow_{action}", args=[generator.pk, 1])
    response = staff_client.get(url, follow=True)
    assert response.status_code == 200
    assert response.redirect_chain[-1][0].startswith(
        reverse("admin:contextadmin_workflow_history", args=[generator.pk])
    )
    if action == "revert":
        assert response.context["confirm_revert"]  # asks first, changes nothing yet
        assert 'id="revert-form"' in response.content.decode()
    assert db_dump() == before
