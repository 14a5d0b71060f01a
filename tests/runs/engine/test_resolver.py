"""Templates: seed 002's ``{{ref}}`` resolution, AG2 ``{name}`` system messages, and linting."""

from __future__ import annotations

from typing import Any

import pytest

from runs.engine import lint_templates, resolve, resolve_json, resolve_system_message

from .support import config_with, demo_config

VARIABLES = {
    "venue_id": "v-1",
    "venue_name": "Main Hall",
    "max_items": 25,
    "interview_complete": True,
    "nothing": None,
    "settings": {"theme": {"color": "teal"}, "tags": ["a", "b"]},
    "trigger": "the global wins",  # same name as a node: the global variable wins
}
NODES = {
    "trigger": {"subject": "Hi", "customer_email": "c@example.com"},
    "parsing": {
        "extraction_result": {"date": "2025-05-01"},
        "items": [{"sku": "X1"}, {"sku": "Y2"}],
    },
    "summary": "plain text output",
    "planner": {"subject": "from the planner"},
}


@pytest.mark.parametrize(
    ("template", "text", "unresolved"),
    [
        pytest.param("Venue: {{venue_name}}", "Venue: Main Hall", [], id="global"),
        pytest.param("{{ venue_name }}", "Main Hall", [], id="spaces-inside-braces"),
        pytest.param("{{planner.subject}}", "from the planner", [], id="node-field"),
        pytest.param("{{parsing.extraction_result.date}}", "2025-05-01", [], id="node-deep-path"),
        pytest.param("{{parsing.items.1.sku}}", "Y2", [], id="list-index"),
        pytest.param(
            "{{parsing}}",
            '{"extraction_result":{"date":"2025-05-01"},"items":[{"sku":"X1"},{"sku":"Y2"}]}',
            [],
            id="whole-node-as-json",
        ),
        pytest.param("{{summary}}", '"plain text output"', [], id="whole-string-node-is-json-too"),
        pytest.param(
            "{{parsing.extraction_result}}", '{"date":"2025-05-01"}', [], id="object-as-json"
        ),
        pytest.param("{{max_items}}", "25", [], id="integer-as-json"),
        pytest.param("{{interview_complete}}", "true", [], id="boolean-as-json"),
        pytest.param("{{nothing}}", "null", [], id="none-as-json"),
        pytest.param("{{settings.theme.color}}", "teal", [], id="global-path"),
        pytest.param("{{settings.tags.0}}", "a", [], id="global-list-index"),
        pytest.param("{{trigger}}", "the global wins", [], id="global-before-node"),
        pytest.param(
            "{{trigger.subject}}",
            "{{trigger.subject}}",
            ["trigger.subject"],
            id="global-shadows-node-path",
        ),
        pytest.param("Hi {{nobody}}!", "Hi {{nobody}}!", ["nobody"], id="unknown-left-as-is"),
        pytest.param(
            "{{planner.missing}}", "{{planner.missing}}", ["planner.missing"], id="missing-field"
        ),
        pytest.param(
            "{{parsing.items.9}}",
            "{{parsing.items.9}}",
            ["parsing.items.9"],
            id="index-out-of-range",
        ),
        pytest.param(
            "{{parsing.items.x}}",
            "{{parsing.items.x}}",
            ["parsing.items.x"],
            id="non-index-on-list",
        ),
        pytest.param(
            "{{venue_name.first}}",
            "{{venue_name.first}}",
            ["venue_name.first"],
            id="path-into-string",
        ),
        pytest.param(
            "{{a}} {{a}} {{b}}", "{{a}} {{a}} {{b}}", ["a", "b"], id="listed-once-in-order"
        ),
        pytest.param(
            "{venue_name} {{}} {{{venue_name}}}",
            "{venue_name} {{}} {Main Hall}",
            [],
            id="single-braces-untouched",
        ),
        pytest.param("no references", "no references", [], id="plain"),
        pytest.param(
            "Subject: {{trigger.subject}} / {{planner.subject}} / {{venue_id}}",
            "Subject: {{trigger.subject}} / from the planner / v-1",
            ["trigger.subject"],
            id="mixed",
        ),
    ],
)
def test_resolve(template: str, text: str, unresolved: list[str]) -> None:
    result = resolve(template, variables=VARIABLES, node_outputs=NODES)
    assert (result.text, result.unresolved) == (text, unresolved)


def test_node_reference_when_no_global_shadows_it() -> None:
    result = resolve(
        "{{trigger.subject}} to {{trigger.customer_email}}", variables={}, node_outputs=NODES
    )
    assert result.text == "Hi to c@example.com"


def test_resolve_json_walks_every_string_but_not_keys() -> None:
    body = {
        "to": "{{trigger.customer_email}}",
        "{{venue_id}}": "key untouched",
        "lines": ["{{venue_name}}", {"n": "{{max_items}}"}, 7, None, True],
        "missing": "{{ghost}}",
        "count": 3,
    }
    result = resolve_json(
        body,
        variables={"venue_name": "Main Hall", "max_items": 25, "venue_id": "v"},
        node_outputs=NODES,
    )
    assert result.value == {
        "to": "c@example.com",
        "{{venue_id}}": "key untouched",
        "lines": ["Main Hall", {"n": "25"}, 7, None, True],
        "missing": "{{ghost}}",
        "count": 3,
    }
    assert result.unresolved == ["ghost"]
    assert body["to"] == "{{trigger.customer_email}}"  # the input is not mutated


@pytest.mark.parametrize("value", [3, None, True, 1.5], ids=["int", "none", "bool", "float"])
def test_resolve_json_passes_non_strings_through(value: Any) -> None:
    assert resolve_json(value, variables={}, node_outputs={}).value == value


@pytest.mark.parametrize(
    ("template", "text", "unresolved"),
    [
        pytest.param(
            "Assisting enterprise {enterprise_id}", "Assisting enterprise acme", [], id="name"
        ),
        pytest.param(
            "context aware: {context_aware}", "context aware: True", [], id="str-format-rendering"
        ),
        pytest.param(
            "{max_items:>4}|{enterprise_id!r}", "  25|'acme'", [], id="spec-and-conversion"
        ),
        pytest.param("{{literal}} {enterprise_id}", "{literal} acme", [], id="escaped-braces"),
        pytest.param("{{{enterprise_id}}}", "{acme}", [], id="escaped-around-field"),
        pytest.param("Hi {ghost}", "Hi {ghost}", ["ghost"], id="unknown-left-as-is"),
        pytest.param(
            "{enterprise_id.__class__}",
            "{enterprise_id.__class__}",
            ["enterprise_id.__class__"],
            id="no-attribute-access",
        ),
        pytest.param(
            "{enterprise_id:d}",
            "{enterprise_id:d}",
            ["enterprise_id:d"],
            id="spec-that-does-not-fit",
        ),
        pytest.param("{} and {0}", "{} and {0}", ["0"], id="positional-fields"),
        pytest.param("a } b { c", "a } b { c", [], id="lone-braces"),
    ],
)
def test_resolve_system_message(template: str, text: str, unresolved: list[str]) -> None:
    values = {"enterprise_id": "acme", "context_aware": True, "max_items": 25}
    result = resolve_system_message(template, values)
    assert (result.text, result.unresolved) == (text, unresolved)


def test_system_message_matches_str_format_when_everything_is_known() -> None:
    template = "Enterprise {enterprise_id} ({{id}}) aware={context_aware} max={max_items:03d}"
    values = {"enterprise_id": "acme", "context_aware": False, "max_items": 7}
    assert resolve_system_message(template, values).text == template.format(**values)


def test_lint_templates() -> None:
    templates = {
        "InterviewAgent.prompt": "Tier {{product_tier}} for {{enterprise_id}} in {{workflow_name}}",
        "save_plan.url": "https://api/{{trigger.venue}}/{{ghost}}",
        "save_plan.body": {
            "overview": "{{concept_overview}}",
            "who": ["{{nobody.name}}", "{{ghost}}"],
        },
        "flags": "{{context_aware}} {{monetization_enabled}} {{interview_complete}}",
    }
    issues = lint_templates(templates, demo_config(), nodes=["trigger"])
    assert [(i.location, i.reference) for i in issues] == [
        ("save_plan.url", "ghost"),
        ("save_plan.body", "nobody.name"),
        ("save_plan.body", "ghost"),
    ]
    assert str(issues[0]) == "save_plan.url: {{ghost}}: no variable or node named ghost"


@pytest.mark.parametrize(
    ("templates", "locations"),
    [
        pytest.param(["{{a}}", "{{product_tier}}", "{{b.c}}"], ["[0]", "[2]"], id="list"),
        pytest.param("{{a}}", ["template"], id="single-string"),
        pytest.param({"x": "{{unknown_node.output}}"}, ["x"], id="nodes-unknown-without-nodes"),
    ],
)
def test_lint_template_forms(templates: Any, locations: list[str]) -> None:
    config = config_with(declarative_variables=[{"name": "product_tier", "value": "beta"}])
    assert [i.location for i in lint_templates(templates, config)] == locations
