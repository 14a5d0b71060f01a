"""Import and export through the services: round trips, edge cases, and all-or-nothing."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from contextadmin_sdk.engine import format as fmt
from contextadmin_sdk.engine.format import ConfigError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextadmin import selectors, services
from contextadmin.models import Trigger, Variable, Workflow
from contextadmin.services import ImportRefused, workflow_import
from tests.contextadmin.conftest import EXAMPLE_PATH, db_dump

pytestmark = pytest.mark.django_db


def export(name: str, environment: str = "development") -> bytes:
    workflow = Workflow.objects.get(name=name)
    return selectors.workflow_export(workflow=workflow, environment=environment)


def many_variables(count: int) -> dict[str, Any]:
    """Return a valid document with ``count`` variables spread over the four categories."""
    section: dict[str, Any] = {
        "database_name": "db",
        "declarative_variables": [],
        "database_variables": [],
        "environment_variables": [],
        "derived_variables": [],
    }
    for i in range(count):
        kind = i % 4
        if kind == 0:
            section["declarative_variables"].append(
                {"name": f"v{i}", "type": "integer", "description": f"n°{i}", "value": i}
            )
        elif kind == 1:
            section["database_variables"].append(
                {
                    "name": f"v{i}",
                    "type": "string",
                    "description": "",
                    "source": {
                        "type": "database",
                        "collection": "C",
                        "search_by": "enterprise_id",
                        "field": f"f{i}",
                    },
                }
            )
        elif kind == 2:
            section["environment_variables"].append(
                {
                    "name": f"v{i}",
                    "type": "boolean",
                    "description": "",
                    "source": {"type": "environment", "env_var": f"FLAG_{i}"},
                    "default": False,
                }
            )
        else:
            section["derived_variables"].append(
                {
                    "name": f"v{i}",
                    "type": "boolean",
                    "description": "",
                    "default": False,
                    "triggers": [
                        {"type": "agent_text", "agent": "Agent", "match": {"equals": f"DONE {i}"}},
                        {"type": "agent_turn_count", "agent": "Agent", "count": i + 1},
                    ],
                }
            )
    return {"context_variables": section}


# -- round trips ------------------------------------------------------------------------------
def test_import_then_export_gives_back_the_example(example_bytes: bytes, example: dict) -> None:
    result = workflow_import(name="Generator", data=example_bytes)
    assert result.created and result.warnings == []
    assert json.loads(export("Generator")) == example


def test_export_is_canonical_and_byte_stable(example_bytes: bytes) -> None:
    workflow_import(name="Generator", data=example_bytes)
    first = export("Generator")
    assert first == fmt.config_export_bytes(fmt.parse_config(example_bytes).config)
    assert first.endswith(b"}\n") and b'\n  "context_variables": {\n    "database_name"' in first
    assert export("Generator") == first
    workflow_import(name="Copy", data=first)
    assert export("Copy") == first


def test_production_export_empties_environment_variables(
    example_bytes: bytes, example: dict
) -> None:
    workflow_import(name="Generator", data=example_bytes)
    production = json.loads(export("Generator", "production"))
    assert production["context_variables"]["environment_variables"] == []
    expected = copy.deepcopy(example)
    expected["context_variables"]["environment_variables"] = []
    assert production == expected


def test_export_rejects_an_unknown_environment(generator: Workflow) -> None:
    with pytest.raises(selectors.UnknownEnvironment, match="development, production"):
        selectors.workflow_export(workflow=generator, environment="staging")


def test_flat_derived_variables_are_accepted(example: dict) -> None:
    flat = copy.deepcopy(example)
    flat["derived_variables"] = flat["context_variables"].pop("derived_variables")
    workflow_import(name="Flat", data=json.dumps(flat))
    assert json.loads(export("Flat")) == example


def test_legacy_variables_key_warns_and_is_ignored(example: dict) -> None:
    legacy = copy.deepcopy(example)
    legacy["context_variables"]["variables"] = [{"name": "old"}]
    legacy["variables"] = []
    result = workflow_import(name="Legacy", data=legacy)
    assert result.warnings == [
        "variables: legacy key ignored (use the four category lists)",
        "context_variables.variables: legacy key ignored (use the four category lists)",
    ]
    assert json.loads(export("Legacy")) == example


def test_unicode_descriptions_and_values_round_trip() -> None:
    document = {
        "context_variables": {
            "declarative_variables": [
                {
                    "name": "greeting",
                    "type": "string",
                    "description": "Größe — 日本語 — emoji ✓🚀",
                    "value": 'naïve café «quoted» "double" \\ backslash',
                }
            ],
            "database_variables": [],
            "environment_variables": [],
            "derived_variables": [
                {
                    "name": "said_hello",
                    "type": "boolean",
                    "description": "",
                    "default": False,
                    "triggers": [
                        {"type": "agent_text", "agent": "Agent", "match": {"equals": "こんにちは"}}
                    ],
                }
            ],
        }
    }
    workflow_import(name="Unicode", data=json.dumps(document, ensure_ascii=True))
    data = export("Unicode")
    assert "日本語".encode() in data and "こんにちは".encode() in data  # UTF-8, not \\u escapes
    assert json.loads(data) == document


@pytest.mark.parametrize(
    "document",
    [
        pytest.param({}, id="empty-object"),
        pytest.param({"context_variables": {}}, id="empty-section"),
        pytest.param(
            {
                "context_variables": {
                    "declarative_variables": [],
                    "database_variables": [],
                    "environment_variables": [],
                    "derived_variables": [],
                },
                "handoffs": [],
            },
            id="empty-lists",
        ),
    ],
)
def test_empty_categories(document: dict) -> None:
    workflow_import(name="Empty", data=document)
    assert json.loads(export("Empty")) == {
        "context_variables": {
            "declarative_variables": [],
            "database_variables": [],
            "environment_variables": [],
            "derived_variables": [],
        }
    }


def test_optional_fields_round_trip() -> None:
    document = {
        "context_variables": {
            "declarative_variables": [
                {"name": "ratio", "type": "number", "description": "", "value": 0.25},
                {"name": "on", "type": "boolean", "description": "", "value": True},
            ],
            "database_variables": [
                {
                    "name": "plan",
                    "type": "string",
                    "description": "",
                    "source": {
                        "type": "database",
                        "database_name": "other",
                        "collection": "C",
                        "search_by": "enterprise_id",
                        "field": "a.b",
                    },
                }
            ],
            "environment_variables": [
                {
                    "name": "limit",
                    "type": "integer",
                    "description": "",
                    "source": {"type": "environment", "env_var": "LIMIT"},
                    "default": 10,
                }
            ],
            "derived_variables": [
                {
                    "name": "done",
                    "type": "boolean",
                    "description": "",
                    "default": True,
                    "triggers": [
                        {
                            "type": "agent_text",
                            "agent": "A",
                            "match": {"equals": "X", "case_sensitive": True, "trim": False},
                        },
                        {"type": "tool_response", "tool": "t"},
                        {"type": "tool_response", "tool": "t", "status": "error"},
                    ],
                }
            ],
        },
        "handoffs": [
            {
                "source_agent": "A",
                "target_agent": "B",
                "condition": "${done} and ${limit}",
                "description": "go",
            }
        ],
    }
    workflow_import(name="Optional", data=document)
    assert json.loads(export("Optional")) == document


def test_declarative_without_type_gets_the_inferred_type() -> None:
    document = {
        "context_variables": {"declarative_variables": [{"name": "max_items", "value": 25}]}
    }
    workflow_import(name="Inferred", data=document)
    declared = json.loads(export("Inferred"))["context_variables"]["declarative_variables"]
    assert declared == [{"name": "max_items", "type": "integer", "description": "", "value": 25}]


def test_500_variables_round_trip() -> None:
    document = many_variables(500)
    workflow_import(name="Big", data=document)
    assert Variable.objects.count() == 500 and Trigger.objects.count() == 250
    assert json.loads(export("Big")) == document


def test_1000_variable_export_takes_a_constant_number_of_queries(
    django_assert_num_queries: Any,
) -> None:
    workflow_import(name="Small", data=many_variables(8))
    workflow_import(name="Huge", data=many_variables(1000))
    small, huge = Workflow.objects.get(name="Small"), Workflow.objects.get(name="Huge")
    with django_assert_num_queries(4):  # variables, their triggers, hand-offs, output mappings
        selectors.workflow_export(workflow=small)
    with django_assert_num_queries(4):
        data = selectors.workflow_export(workflow=huge)
    assert len(json.loads(data)["context_variables"]["derived_variables"]) == 250


# -- replace, dry run, refusals ---------------------------------------------------------------
def test_import_into_a_workflow_with_other_definitions_needs_replace(
    generator: Workflow, example_bytes: bytes
) -> None:
    document = json.loads(example_bytes)
    document["context_variables"]["declarative_variables"][0]["description"] = "edited"
    before = db_dump()
    with pytest.raises(ImportRefused, match=r"already has definitions.*--replace"):
        workflow_import(name="Generator", data=json.dumps(document))
    assert db_dump() == before


def test_importing_the_definitions_a_workflow_has_needs_no_replace_and_changes_nothing(
    generator: Workflow, example_bytes: bytes
) -> None:
    """A pipeline re-running its import of an unchanged file: told so, not refused."""
    workflow_import(name="Generator", data=example_bytes, replace=True)
    before = db_dump()
    result = workflow_import(name="Generator", data=example_bytes)
    assert result.unchanged is not None and result.version is None
    assert db_dump() == before


def test_import_into_an_empty_workflow_needs_no_replace(example_bytes: bytes) -> None:
    Workflow.objects.create(name="Blank", description="made in the admin")
    result = workflow_import(name="Blank", data=example_bytes)
    assert not result.created
    assert Workflow.objects.get(name="Blank").description == "made in the admin"


def test_replace_swaps_all_definitions(generator: Workflow, example: dict) -> None:
    changed = copy.deepcopy(example)
    section = changed["context_variables"]
    section["declarative_variables"][0]["value"] = "ga"
    del section["environment_variables"][1]
    section["derived_variables"].append({"name": "review_done", "triggers": []})
    result = workflow_import(name="Generator", data=changed, replace=True)
    assert not result.created
    assert [str(e) for e in result.diff.entries] == [
        "+ derived variable review_done: boolean",
        "- environment variable monetization_enabled",
        '~ declarative variable product_tier: value "beta" → "ga"',
    ]
    exported = json.loads(export("Generator"))
    assert exported["context_variables"]["declarative_variables"][0]["value"] == "ga"
    assert Variable.objects.filter(workflow=generator).count() == 6


def test_dry_run_reports_and_writes_nothing(generator: Workflow, example: dict) -> None:
    changed = copy.deepcopy(example)
    changed["context_variables"]["declarative_variables"][1]["value"] = 50
    before = db_dump()
    result = workflow_import(name="Generator", data=changed, replace=True, dry_run=True)
    assert result.diff.lines() == ["~ declarative variable max_items: value 25 → 50"]
    assert db_dump() == before
    new = workflow_import(name="Fresh", data=changed, dry_run=True)
    assert new.created and not Workflow.objects.filter(name="Fresh").exists()


def test_dry_run_refuses_like_the_real_import(generator: Workflow, example_bytes: bytes) -> None:
    document = json.loads(example_bytes)
    document["context_variables"]["declarative_variables"][0]["description"] = "edited"
    with pytest.raises(ImportRefused):
        workflow_import(name="Generator", data=json.dumps(document), dry_run=True)


@pytest.mark.parametrize("name", ["", "9lives", "with space", "x" * 101, "../etc"])
def test_bad_workflow_names_are_refused(name: str, example_bytes: bytes) -> None:
    with pytest.raises(ImportRefused, match="workflow name"):
        workflow_import(name=name, data=example_bytes)
    assert not Workflow.objects.exists()


# -- every rejected import changes nothing and names the JSON path ------------------------------
Mutation = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Mutation:
    """Return a mutation that sets ``a.b[0].c`` (``None`` as value deletes the key)."""

    def mutate(document: dict[str, Any]) -> Any:
        parts: list[Any] = []
        for chunk in path.split("."):
            name, _, rest = chunk.partition("[")
            parts.append(name)
            parts.extend(int(i) for i in rest.rstrip("]").split("][") if rest)
        target: Any = document
        for part in parts[:-1]:
            target = target[part]
        if value is _DELETE:
            del target[parts[-1]]
        else:
            target[parts[-1]] = value
        return document

    return mutate


_DELETE = object()
CV = "context_variables"
HANDOFF = {"source_agent": "A", "target_agent": "B", "description": ""}

REJECTIONS = [
    pytest.param(
        _set(f"{CV}.derived_variables[0].triggers[0].agent", _DELETE),
        f"{CV}.derived_variables[0].triggers[0].agent",
        "field required",
        id="trigger-agent-missing",
    ),
    pytest.param(lambda d: b"{not json", "", "not valid JSON", id="invalid-json"),
    pytest.param(
        lambda d: json.dumps(d).encode("utf-8").replace(b"beta", b"b\xe9ta"),
        "",
        "not valid JSON",
        id="not-utf-8",
    ),
    pytest.param(lambda d: [d], "", "must be a JSON object", id="top-level-list"),
    pytest.param(lambda d: b"", "", "not valid JSON", id="empty-file"),
    pytest.param(
        lambda d: json.dumps(d).replace("25", "9" * 5000).encode(),
        "",
        "an integer of 5,000 digits: integers must fit in a signed 64-bit integer",
        id="integer-too-long-to-decode",
    ),
    pytest.param(
        lambda d: json.dumps(d).replace(
            '"context_variables": {', '"context_variables": {}, "context_variables": {', 1
        ),
        "",
        "the key 'context_variables' is given twice in one object: keep one",
        id="key-given-twice",
    ),
    pytest.param(lambda d: b"[" * 100_000, "", "nested too deeply", id="nested-too-deeply"),
    pytest.param(_set(CV, []), CV, "must be an object", id="section-not-object"),
    pytest.param(_set("extra", 1), "extra", "unknown field", id="unknown-top-level-key"),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].colour", "red"),
        f"{CV}.declarative_variables[0].colour",
        "unknown field",
        id="unknown-variable-key",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].name", "ProductTier"),
        f"{CV}.declarative_variables[0].name",
        "lower_snake_case",
        id="name-not-lower-snake-case",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].name", "x" * 65),
        f"{CV}.declarative_variables[0].name",
        "at most 64",
        id="name-too-long",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].name", "enterprise_id"),
        f"{CV}.declarative_variables[0].name",
        "reserved",
        id="name-reserved",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].name", "product_tier"),
        f"{CV}.derived_variables[0].name",
        "already declared at context_variables.declarative_variables[0]",
        id="name-duplicate-across-categories",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].triggers[0].agent", "max_items"),
        f"{CV}.declarative_variables[1].name",
        "also an agent name",
        id="name-equals-agent",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[1].value", "25"),
        f"{CV}.declarative_variables[1].value",
        "must be an integer (the declared type), got a string",
        id="declarative-value-type",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[1].value", True),
        f"{CV}.declarative_variables[1].value",
        "got a boolean",
        id="declarative-bool-is-not-integer",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].value", {"a": 1}),
        f"{CV}.declarative_variables[0].value",
        "got an object",
        id="declarative-value-object",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].value", "x" * 1001),
        f"{CV}.declarative_variables[0].value",
        "at most 1000",
        id="declarative-value-too-large",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].value", _DELETE),
        f"{CV}.declarative_variables[0].value",
        "field required",
        id="declarative-value-missing",
    ),
    pytest.param(
        _set(f"{CV}.declarative_variables[0].type", "text"),
        f"{CV}.declarative_variables[0].type",
        "'string', 'integer', 'number' or 'boolean'",
        id="type-unknown",
    ),
    pytest.param(
        _set(f"{CV}.database_variables[0].source.collection", _DELETE),
        f"{CV}.database_variables[0].source.collection",
        "field required",
        id="database-collection-missing",
    ),
    pytest.param(
        lambda d: _set(f"{CV}.database_variables[0].source.database_name", _DELETE)(
            _set(f"{CV}.database_name", _DELETE)(d)
        ),
        f"{CV}.database_variables[0].source.database_name",
        "set it here or context_variables.database_name",
        id="database-name-nowhere",
    ),
    pytest.param(
        _set(f"{CV}.database_variables[0].source.type", "environment"),
        f"{CV}.database_variables[0].source.type",
        "'database'",
        id="database-source-type",
    ),
    pytest.param(
        _set(f"{CV}.environment_variables[0].source.env_var", "OPENAI_API_KEY"),
        f"{CV}.environment_variables[0].source.env_var",
        fmt.SECRET_ENV_REASON,
        id="env-var-secret-key",
    ),
    pytest.param(
        _set(f"{CV}.environment_variables[0].source.env_var", "SESSION_SECRET"),
        f"{CV}.environment_variables[0].source.env_var",
        "looks like a secret",
        id="env-var-secret",
    ),
    pytest.param(
        _set(f"{CV}.environment_variables[0].source.env_var", "context_aware"),
        f"{CV}.environment_variables[0].source.env_var",
        "environment variable name",
        id="env-var-lowercase",
    ),
    pytest.param(
        _set(f"{CV}.environment_variables[0].default", "yes"),
        f"{CV}.environment_variables[0].default",
        "must be a boolean",
        id="env-default-type",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].default", "false"),
        f"{CV}.derived_variables[0].default",
        "boolean",
        id="derived-default-not-boolean",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].type", "string"),
        f"{CV}.derived_variables[0].type",
        "'boolean'",
        id="derived-type-not-boolean",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].triggers[0].type", "timer_expired"),
        f"{CV}.derived_variables[0].triggers[0]",
        "unknown trigger type",
        id="trigger-type-unknown",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].triggers[0].type", _DELETE),
        f"{CV}.derived_variables[0].triggers[0]",
        "field required: type",
        id="trigger-type-missing",
    ),
    pytest.param(
        _set(
            f"{CV}.derived_variables[0].triggers[0]",
            {"type": "agent_turn_count", "agent": "A", "count": 0},
        ),
        f"{CV}.derived_variables[0].triggers[0].count",
        "greater than or equal to 1",
        id="turn-count-zero",
    ),
    pytest.param(
        _set(
            f"{CV}.derived_variables[0].triggers[0]",
            {"type": "agent_turn_count", "agent": "A", "count": "3"},
        ),
        f"{CV}.derived_variables[0].triggers[0].count",
        "integer",
        id="turn-count-string",
    ),
    pytest.param(
        _set(f"{CV}.derived_variables[0].triggers[0]", {"type": "tool_response"}),
        f"{CV}.derived_variables[0].triggers[0].tool",
        "field required",
        id="tool-response-without-tool",
    ),
    pytest.param(
        _set(
            f"{CV}.derived_variables[0].triggers",
            [{"type": "tool_response", "tool": "t"}] * 101,
        ),
        f"{CV}.derived_variables[0].triggers",
        "at most 100",
        id="too-many-triggers",
    ),
    pytest.param(
        lambda d: {**d, "derived_variables": []},
        "derived_variables",
        "both flat and under context_variables",
        id="derived-flat-and-nested",
    ),
    pytest.param(
        _set("handoffs", [{**HANDOFF, "condition": "${interview_complete} or ${context_aware}"}]),
        "handoffs[0].condition",
        '"or" is not allowed',
        id="condition-or",
    ),
    pytest.param(
        _set("handoffs", [{**HANDOFF, "condition": "not ${interview_complete}"}]),
        "handoffs[0].condition",
        '"not" is not allowed',
        id="condition-not",
    ),
    pytest.param(
        _set("handoffs", [{**HANDOFF, "condition": "${max_items} == 3"}]),
        "handoffs[0].condition",
        "comparisons are not allowed",
        id="condition-comparison",
    ),
    pytest.param(
        _set("handoffs", [{**HANDOFF, "condition": "${product_tier}"}]),
        "handoffs[0].condition",
        "cannot route",
        id="condition-declarative",
    ),
    pytest.param(
        _set("handoffs", [{**HANDOFF, "condition": "${missing}"}]),
        "handoffs[0].condition",
        "unknown variable missing",
        id="condition-unknown-variable",
    ),
    pytest.param(
        _set("handoffs", [{**HANDOFF, "condition": ""}]),
        "handoffs[0].condition",
        "at least 1 character",
        id="condition-empty",
    ),
    pytest.param(
        _set("handoffs", [{"source_agent": "A", "condition": "${interview_complete}"}]),
        "handoffs[0].target_agent",
        "field required",
        id="handoff-target-missing",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "message"), REJECTIONS)
def test_rejected_import_names_the_path_and_changes_nothing(
    generator: Workflow, example: dict, mutate: Mutation, path: str, message: str
) -> None:
    data = mutate(copy.deepcopy(example))
    before = db_dump()
    with pytest.raises(ConfigError) as caught:
        workflow_import(name="Generator", data=data, replace=True)
    assert any(i.path == path and message in i.message for i in caught.value.issues), [
        str(i) for i in caught.value.issues
    ]
    assert db_dump() == before
    with pytest.raises(ConfigError):  # a new workflow is not created either
        workflow_import(name="Another", data=data)
    assert db_dump() == before


def test_the_error_text_names_the_json_path(generator: Workflow, example: dict) -> None:
    del example["context_variables"]["derived_variables"][0]["triggers"][0]["agent"]
    with pytest.raises(ConfigError) as caught:
        workflow_import(name="Generator", data=example, replace=True)
    assert (
        str(caught.value)
        == "context_variables.derived_variables[0].triggers[0].agent: field required"
    )


# -- property: whatever the file, the importer answers with a ConfigError or a result -----------
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
_names = st.sampled_from(
    ["context_variables", "handoffs", "derived_variables", "variables", "name", "type", "value"]
)


@st.composite
def _mangled_examples(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """Return the example with one randomly chosen place replaced by random JSON."""
    document = copy.deepcopy(base)
    target: Any = document
    for _ in range(draw(st.integers(0, 5))):
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target)))
            if not isinstance(target[key], dict | list) or draw(st.booleans()):
                target[key] = draw(_json)
                return document
            target = target[key]
        elif isinstance(target, list) and target:
            index = draw(st.integers(0, len(target) - 1))
            if not isinstance(target[index], dict | list) or draw(st.booleans()):
                target[index] = draw(_json)
                return document
            target = target[index]
    if isinstance(target, dict):
        target[draw(_names)] = draw(_json)
    return document


def _example() -> dict[str, Any]:
    from tests.contextadmin.conftest import EXAMPLE_PATH

    return json.loads(EXAMPLE_PATH.read_bytes())


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=_json | _mangled_examples(_example()) | st.binary(max_size=64))
def test_import_never_fails_other_than_with_a_config_error(
    generator: Workflow, document: Any
) -> None:
    before = db_dump()
    try:
        services.workflow_import(name="Generator", data=document, replace=True, dry_run=True)
    except ConfigError as exc:
        assert exc.issues and all(isinstance(i.message, str) and i.message for i in exc.issues)
    assert db_dump() == before


def test_production_export_drops_handoffs_gated_on_environment_flags_and_stays_valid(db):
    from contextadmin_sdk.engine.format import parse_config

    data = json.loads(EXAMPLE_PATH.read_text())
    data["handoffs"] = [
        {
            "source_agent": "InterviewAgent",
            "target_agent": "PlannerAgent",
            "condition": "${interview_complete}",
            "description": "",
        },
        {
            "source_agent": "InterviewAgent",
            "target_agent": "BillingAgent",
            "condition": "${monetization_enabled} and ${interview_complete}",
            "description": "",
        },
    ]
    workflow_import(name="Gated", data=data)
    workflow = Workflow.objects.get(name="Gated")
    production = json.loads(selectors.workflow_export(workflow=workflow, environment="production"))
    development = json.loads(selectors.workflow_export(workflow=workflow))
    assert [h["target_agent"] for h in development["handoffs"]] == ["PlannerAgent", "BillingAgent"]
    assert [h["target_agent"] for h in production["handoffs"]] == ["PlannerAgent"]
    assert production["context_variables"]["environment_variables"] == []
    parse_config(production)  # valid on its own: no reference to a suppressed flag
