"""The tables: names unique across all four categories in the database too."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from contextadmin.models import (
    DeclarativeVariable,
    DerivedVariable,
    Variable,
    Workflow,
    workflow_name_validator,
)

pytestmark = pytest.mark.django_db


def test_variable_names_are_unique_across_categories_in_the_database() -> None:
    workflow = Workflow.objects.create(name="W")
    Variable.objects.create(workflow=workflow, category="declarative", name="flag", value="x")
    with pytest.raises(IntegrityError), transaction.atomic():
        Variable.objects.create(workflow=workflow, category="derived", name="flag", default=False)


def test_the_same_name_may_live_in_two_workflows() -> None:
    for name in ("A", "B"):
        workflow = Workflow.objects.create(name=name)
        Variable.objects.create(workflow=workflow, category="declarative", name="flag", value=1)
    assert Variable.objects.filter(name="flag").count() == 2


def test_category_must_be_one_of_the_four() -> None:
    workflow = Workflow.objects.create(name="W")
    with pytest.raises(IntegrityError), transaction.atomic():
        Variable.objects.create(workflow=workflow, category="static", name="x")


def test_proxies_see_only_their_category() -> None:
    workflow = Workflow.objects.create(name="W")
    Variable.objects.create(workflow=workflow, category="declarative", name="a", value=1)
    Variable.objects.create(workflow=workflow, category="derived", name="b", default=False)
    assert [v.name for v in DeclarativeVariable.objects.all()] == ["a"]
    assert [v.name for v in DerivedVariable.objects.all()] == ["b"]


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        pytest.param("Generator", True, id="word"),
        pytest.param("a", True, id="one-letter"),
        pytest.param("My_flow-2", True, id="underscore-dash-digit"),
        pytest.param("A" * 100, True, id="100-chars"),
        pytest.param("A" * 101, False, id="101-chars"),
        pytest.param("2fast", False, id="leading-digit"),
        pytest.param("_x", False, id="leading-underscore"),
        pytest.param("has space", False, id="space"),
        pytest.param("dot.ted", False, id="dot"),
        pytest.param("slash/ed", False, id="slash"),
        pytest.param("", False, id="empty"),
        pytest.param("Zürich", False, id="non-ascii"),
    ],
)
def test_workflow_name_rule(name: str, valid: bool) -> None:
    if valid:
        workflow_name_validator(name)
    else:
        with pytest.raises(ValidationError):
            workflow_name_validator(name)
