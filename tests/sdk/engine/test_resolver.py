"""Templates: seed 002's ``{{ref}}`` resolution, AG2 ``{name}`` system messages, and linting."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from contextadmin_sdk.engine import (
    JSON_MAX_DEPTH,
    TemplateError,
    lint_templates,
    resolve,
    resolve_json,
    resolve_system_message,
)
from contextadmin_sdk.engine.resolver import template_references
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- issue 14: hostile templates resolve in linear time (6) -----------------------------------
_OLD_REFERENCE = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")  # the backtracking pattern, as an oracle

HOSTILE = 100_000
HOSTILE_TEMPLATES = {
    "unclosed-whitespace": "{{" + " " * (HOSTILE - 3) + "}",
    "unclosed-text": "{{" + "a" * (HOSTILE - 2),
    "many-openings": "{{" * (HOSTILE // 2),
    "many-openings-spaced": "{{ " * (HOSTILE // 3),
    "many-closings": "}}" * (HOSTILE // 2),
    "nested": "{{" * (HOSTILE // 4) + "}}" * (HOSTILE // 4),
    "alternating": "{{ a }" * (HOSTILE // 6),
    "many-references": "{{venue_name}}" * (HOSTILE // 14),
    "many-unresolved": "".join(f"{{{{ghost{i}}}}}" for i in range(HOSTILE // 12)),
    "single-braces": "{a" * (HOSTILE // 2),
    "long-reference": "{{" + "a." * (HOSTILE // 2 - 2) + "}}",
}


@pytest.mark.parametrize("template", list(HOSTILE_TEMPLATES.values()), ids=list(HOSTILE_TEMPLATES))
def test_a_hostile_template_resolves_in_well_under_a_second(template: str) -> None:
    assert len(template) >= HOSTILE * 0.9
    started = time.perf_counter()
    resolve(template, variables=VARIABLES, node_outputs=NODES)
    resolve_json({"body": [template]}, variables=VARIABLES, node_outputs=NODES)
    resolve_system_message(template, VARIABLES)
    lint_templates([template], config_with())
    assert time.perf_counter() - started < 1.0  # a guard: the old pattern took 17 s on 4,000


@settings(max_examples=300, deadline=None)
@given(
    template=st.lists(
        st.sampled_from(["{", "}", " ", "a", ".", "venue_name", "x", "\n", "0"]), max_size=40
    ).map("".join)
)
def test_the_scanner_finds_what_the_old_pattern_found(template: str) -> None:
    expected_unresolved: dict[str, None] = {}

    def substitute(match: re.Match[str]) -> str:
        reference = match.group(1).strip()
        name, *path = reference.split(".")
        if name == "venue_name" and not path:
            return "Main Hall"
        expected_unresolved[reference] = None
        return match.group(0)

    expected = _OLD_REFERENCE.sub(substitute, template)
    result = resolve(template, variables={"venue_name": "Main Hall"}, node_outputs={})
    assert (result.text, result.unresolved) == (expected, list(expected_unresolved))


@settings(max_examples=200, deadline=None)
@given(
    template=st.text(max_size=60),
    variables=st.dictionaries(
        st.text(max_size=5),
        st.recursive(
            st.none() | st.integers() | st.text(max_size=5), lambda c: st.lists(c, max_size=3)
        ),
        max_size=3,
    ),
)
def test_resolve_never_raises_and_is_deterministic(
    template: str, variables: dict[str, Any]
) -> None:
    first = resolve(template, variables=variables, node_outputs={})
    assert resolve(template, variables=variables, node_outputs={}) == first


# -- issue 14: depth is bounded, never a RecursionError (7) -----------------------------------
def _deep_list(depth: int) -> Any:
    value: Any = "{{venue_name}}"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [600, 5_000])
def test_resolve_json_refuses_json_nested_deeper_than_the_limit(depth: int) -> None:
    value = _deep_list(depth)
    if depth < 900:  # legal JSON (Python's own encoder takes it): the limit is the engine's
        assert json.loads(json.dumps(value)) == value
    with pytest.raises(TemplateError, match="template: nested more than 64 levels"):
        resolve_json(value, variables=VARIABLES, node_outputs=NODES)


def test_resolve_json_within_the_limit_resolves() -> None:
    result = resolve_json(_deep_list(JSON_MAX_DEPTH - 1), variables=VARIABLES, node_outputs={})
    inner = result.value
    for _ in range(JSON_MAX_DEPTH - 1):
        inner = inner[0]
    assert inner == "Main Hall"


@pytest.mark.parametrize(
    ("variables", "template"),
    [
        pytest.param({"deep": _deep_list(1_000)}, "{{deep}}", id="variable-1000-deep"),
        pytest.param({"deep": _deep_list(1_000)}, "{{deep.0}}", id="path-into-deep"),
        pytest.param({"huge": 10**5000}, "{{huge}}", id="int-beyond-str-limit"),
    ],
)
def test_a_value_too_deep_or_big_to_render_stays_unresolved(
    variables: dict[str, Any], template: str
) -> None:
    result = resolve(template, variables=variables, node_outputs={})
    assert result.text == template
    assert result.unresolved == [template[2:-2]]
    node = resolve(template, variables={}, node_outputs=variables)
    assert node.text == template
    system = resolve_system_message("{" + template[2:-2].split(".")[0] + "}", variables)
    assert system.unresolved


def test_template_references_walks_any_depth() -> None:
    assert list(template_references(_deep_list(10_000))) == ["venue_name"]
