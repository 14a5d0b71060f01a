"""The diff between current definitions and an incoming file, as operators read it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from contextadmin_sdk.engine import format as fmt

from contextadmin import selectors
from contextadmin.models import Workflow

pytestmark = pytest.mark.django_db

HANDOFF = {"source_agent": "A", "target_agent": "B", "description": ""}


def diff_lines(workflow: Workflow | None, document: dict[str, Any]) -> list[str]:
    config = fmt.parse_config(document).config
    return selectors.workflow_diff(workflow=workflow, config=config).lines()


def test_identical_definitions_have_no_changes(generator: Workflow, example: dict) -> None:
    assert diff_lines(generator, example) == ["no changes"]
    assert not selectors.workflow_diff(
        workflow=generator, config=fmt.parse_config(example).config
    )


def test_a_new_workflow_adds_everything(example: dict) -> None:
    assert diff_lines(None, example) == [
        '+ database_name: (none) → "autogen_ai_agents"',
        '+ declarative variable product_tier: string, value "beta"',
        "+ declarative variable max_items: integer, value 25",
        "+ database variable concept_overview: string, from Concepts.ConceptOverview",
        "+ environment variable context_aware: boolean, from $CONTEXT_AWARE",
        "+ environment variable monetization_enabled: boolean, from $MONETIZATION_ENABLED",
        "+ derived variable interview_complete: boolean, 1 trigger",
    ]


def test_changed_fields_are_named_by_path(generator: Workflow, example: dict) -> None:
    changed = copy.deepcopy(example)
    section = changed["context_variables"]
    section["database_variables"][0]["source"]["collection"] = "Ideas"
    section["derived_variables"][0]["triggers"][0]["match"] = {"equals": "DONE", "trim": False}
    section["derived_variables"][0]["triggers"].append({"type": "tool_response", "tool": "t"})
    section["environment_variables"][0]["default"] = True
    assert diff_lines(generator, changed) == [
        '~ database variable concept_overview: source.collection "Concepts" → "Ideas"',
        "~ environment variable context_aware: default (none) → true",
        '~ derived variable interview_complete: triggers[0].match.equals "NEXT" → "DONE"; '
        "triggers[0].match.trim (none) → false; "
        'triggers[1].type (none) → "tool_response"; triggers[1].tool (none) → "t"',
    ]


def test_a_variable_moving_category_is_one_change(generator: Workflow, example: dict) -> None:
    moved = copy.deepcopy(example)
    section = moved["context_variables"]
    # (Not a base flag such as context_aware: only an environment variable may take that name.)
    section["declarative_variables"].pop(0)
    section["derived_variables"].append({"name": "product_tier", "triggers": []})
    assert diff_lines(generator, moved) == [
        "~ derived variable product_tier: category declarative → derived; "
        'type "string" → "boolean"; '
        'description "Static tier label shipped with the workflow (not env or db)" → ""; '
        'value "beta" → (none); default (none) → false; triggers (none) → []',
    ]


def test_reordering_is_reported(generator: Workflow, example: dict) -> None:
    reordered = copy.deepcopy(example)
    reordered["context_variables"]["declarative_variables"].reverse()
    assert diff_lines(generator, reordered) == [
        "~ order of the declarative variables: product_tier, max_items → max_items, product_tier",
    ]


def test_handoffs_added_changed_removed(generator: Workflow, example: dict) -> None:
    first = copy.deepcopy(example)
    first["handoffs"] = [
        {**HANDOFF, "condition": "${interview_complete}"},
        {**HANDOFF, "source_agent": "C", "condition": "${context_aware}"},
    ]
    schema_config = fmt.parse_config(first).config
    assert selectors.workflow_diff(workflow=generator, config=schema_config).lines() == [
        "+ hand-off A → B: when ${interview_complete}",
        "+ hand-off C → B: when ${context_aware}",
    ]
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=first, replace=True)
    second = copy.deepcopy(first)
    second["handoffs"] = [{**HANDOFF, "condition": "${interview_complete} and ${context_aware}"}]
    assert diff_lines(generator, second) == [
        '~ hand-off A → B: condition "${interview_complete}" → "${interview_complete} and '
        '${context_aware}"',
        "- hand-off C → B: when ${context_aware}",
    ]


def test_summary_counts(generator: Workflow, example: dict) -> None:
    changed = copy.deepcopy(example)
    changed["context_variables"]["declarative_variables"].pop()
    changed["context_variables"]["declarative_variables"][0]["value"] = "ga"
    diff = selectors.workflow_diff(workflow=generator, config=fmt.parse_config(changed).config)
    assert diff.summary() == "0 added, 1 removed, 1 changed"
