"""A save that deletes a variable a hand-off condition still names is refused next to that
condition, and changes nothing: every version stays one a run can start from."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from contextadmin import services
from contextadmin.models import Workflow, WorkflowVersion
from tests.contextadmin.conftest import db_dump
from tests.contextadmin.test_admin import change_url, field_errors, page_data

pytestmark = pytest.mark.django_db

CHAT_PATH = settings.BASE_DIR / "contextadmin" / "demo" / "ag2_context_variables.json"


@pytest.fixture
def chat(db: None) -> Workflow:
    services.workflow_import(name="GeneratorChat", data=CHAT_PATH.read_bytes())
    return Workflow.objects.get(name="GeneratorChat")


def _prefix_of(data: dict[str, Any], category: str, name: str) -> str:
    for key, value in data.items():
        if key.startswith(f"{category}-") and key.endswith("-name") and value == name:
            return key[: -len("-name")]
    raise AssertionError(f"{name} not on the page")


@pytest.mark.parametrize(
    ("category", "name"),
    [("derived_variables", "handoffs_reviewed"), ("environment_variables", "monetization_enabled")],
)
def test_deleting_a_variable_a_handoff_names_is_refused_at_the_condition(
    staff_client: Client, chat: Workflow, category: str, name: str
) -> None:
    data = page_data(staff_client, chat)
    data[f"{_prefix_of(data, category, name)}-DELETE"] = "on"
    rule = next(
        key[: -len("-condition")]
        for key, value in data.items()
        if key.startswith("handoffs-") and key.endswith("-condition") and f"${{{name}}}" in value
    )
    before, versions = db_dump(), WorkflowVersion.objects.count()
    response = staff_client.post(change_url(chat), data)
    assert response.status_code == 200  # the page again, with the error
    errors = field_errors(response, rule, "condition")
    assert errors and name in errors[0], errors
    assert db_dump() == before
    assert WorkflowVersion.objects.count() == versions
