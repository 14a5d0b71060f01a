"""Seed 004's ``agent``/``world`` namespaces and output mappings
(sdk/contextadmin_sdk/engine/outputs.py).

The rules: ``outputs`` is optional (files without it stay valid and export unchanged); a mapping
writes ``agent.…`` or ``world.…`` only, never a variable, one mapping per path, never a path
inside another's; when the tool responds its ``data[field]`` is written (a missing field, an
oversized value: nothing written, and the event's result says why); templates read the
namespaces; replay rebuilds them exactly.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from contextadmin_sdk.engine import RunState, lint_templates, replay, resolve
from contextadmin_sdk.engine.format import (
    MAX_OUTPUTS,
    OUTPUT_VALUE_MAX_BYTES,
    ConfigError,
    config_export_bytes,
    json_schema,
    parse_config,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sdk.engine.support import config_with, derived_var, says, text, tool

BASE = {"enterprise_id": "acme", "workflow_name": "Research"}
KEYWORDS = {"tool": "extract_keywords", "field": "keywords", "to": "agent.intermediate.keywords"}
DOCUMENTS = {"tool": "search_documents", "field": "document_list",
             "to": "agent.final_result.documents"}
WEATHER = {"tool": "weather", "field": "today", "to": "world.weather.today"}


def config(*outputs: dict[str, Any], **section: Any) -> dict[str, Any]:
    document = config_with(
        declarative_variables=[{"name": "max_items", "value": 25}],
        derived_variables=[derived_var("plan_saved", {"type": "tool_response", "tool": "save"})],
        **section,
    )
    document["outputs"] = list(outputs)
    return document


def problems(document: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    return [str(issue) for issue in caught.value.issues]


# -- the format ---------------------------------------------------------------------------------
def test_outputs_are_optional_and_absent_from_an_export_without_them() -> None:
    document = config()
    del document["outputs"]
    exported = config_export_bytes(parse_config(document).config)
    assert b'"outputs"' not in exported
    assert config_export_bytes(parse_config(config()).config) == exported


def test_outputs_export_after_handoffs_in_their_order_and_round_trip() -> None:
    document = config(WEATHER, KEYWORDS)
    exported = config_export_bytes(parse_config(document).config)
    assert exported.index(b'"outputs"') > exported.index(b'"context_variables"')
    again = parse_config(exported).config
    assert [output.model_dump() for output in again.outputs] == [WEATHER, KEYWORDS]
    assert config_export_bytes(again) == exported
    assert config_export_bytes(again, production=True).count(b'"to"') == 2


def test_the_schema_describes_outputs() -> None:
    schema = json_schema()
    mapping = schema["$defs"]["OutputMapping"]
    assert mapping["required"] == ["tool", "field", "to"]
    assert mapping["properties"]["to"]["pattern"].startswith("^(?:agent|world)")
    assert schema["properties"]["outputs"]["maxItems"] == MAX_OUTPUTS


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        pytest.param(
            [{**KEYWORDS, "to": "context.max_items"}],
            "outputs[0].to: context.max_items names declarative variable max_items",
            id="a-context-variable",
        ),
        pytest.param(
            [{**KEYWORDS, "to": "max_items"}],
            "outputs[0].to: max_items names declarative variable max_items",
            id="a-bare-variable",
        ),
        pytest.param(
            [{**KEYWORDS, "to": "execution.status"}],
            "outputs[0].to: execution is a namespace the run writes itself",
            id="execution-namespace",
        ),
        pytest.param(
            [{**KEYWORDS, "to": "nodes.extract_keywords"}],
            "outputs[0].to: nodes is a namespace the run writes itself",
            id="nodes-namespace",
        ),
        pytest.param(
            [{**KEYWORDS, "to": "temp.keywords"}],
            "outputs[0].to: 'temp.keywords' is not in a namespace a mapping writes",
            id="unknown-namespace",
        ),
        pytest.param(
            [{**KEYWORDS, "to": "agent"}], "outputs[0].to: name a key inside agent", id="no-key"
        ),
        pytest.param(
            [{**KEYWORDS, "to": "agent.items.0"}],
            "outputs[0].to: '0' is not a key",
            id="a-list-index",
        ),
        pytest.param(
            [{**KEYWORDS, "to": "agent..x"}], "outputs[0].to: '' is not a key", id="empty-key"
        ),
        pytest.param(
            [{**KEYWORDS, "to": "agent." + ".".join(["k"] * 17)}],
            "outputs[0].to: at most 16 keys after agent",
            id="too-deep",
        ),
        pytest.param(
            [{**KEYWORDS, "to": "agent." + "k" * 300}],
            "outputs[0].to: string should have at most 200 characters",
            id="too-long",
        ),
        pytest.param(
            [KEYWORDS, {**DOCUMENTS, "to": KEYWORDS["to"]}],
            "outputs[1].to: agent.intermediate.keywords is already written by outputs[0]",
            id="two-mappings-one-path",
        ),
        pytest.param(
            [KEYWORDS, {**DOCUMENTS, "to": "agent.intermediate.keywords.first"}],
            "outputs[1].to: agent.intermediate.keywords.first is inside "
            "agent.intermediate.keywords, which outputs[0] writes",
            id="inside-another-path",
        ),
        pytest.param(
            [KEYWORDS, {**DOCUMENTS, "to": "agent.intermediate"}],
            "outputs[1].to: agent.intermediate holds the path outputs[0] writes",
            id="above-another-path",
        ),
        pytest.param(
            [{**KEYWORDS, "tool": ""}],
            "outputs[0].tool: string should have at least 1 character",
            id="empty-tool",
        ),
        pytest.param(
            [{**KEYWORDS, "tool": " extract"}],
            "outputs[0].tool: no spaces before or after the name",
            id="padded-tool",
        ),
        pytest.param(
            [{**KEYWORDS, "field": "k" * 201}],
            "outputs[0].field: string should have at most 200 characters",
            id="long-field",
        ),
        pytest.param(
            [{**KEYWORDS, "field": 3}], "outputs[0].field: input should be a valid string",
            id="field-not-a-string",
        ),
        pytest.param(
            [{"tool": "t", "to": "agent.x"}], "outputs[0].field: field required", id="no-field"
        ),
        pytest.param(
            [{**KEYWORDS, "from": "x"}], "outputs[0].from: unknown field", id="unknown-key"
        ),
        pytest.param(
            [{**KEYWORDS, "tool": "agent"}],
            "outputs[0].tool: agent is a namespace of the run's state",
            id="tool-named-agent",
        ),
        pytest.param(
            [{**KEYWORDS, "tool": "max_items"}],
            "context_variables.declarative_variables[0].name: max_items is also a tool name",
            id="tool-named-like-a-variable",
        ),
    ],
)
def test_bad_mappings_are_refused_with_the_field_named(
    outputs: list[dict[str, Any]], expected: str
) -> None:
    found = problems(config(*outputs))
    assert any(problem.startswith(expected) for problem in found), found


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            config_with(declarative_variables=[{"name": "world", "value": 1}]),
            "context_variables.declarative_variables[0].name: world is a namespace of the "
            "run's state",
            id="variable-named-world",
        ),
        pytest.param(
            config_with(derived_variables=[derived_var("done", says("agent", "DONE"))]),
            "context_variables.derived_variables[0].triggers[0].agent: agent is a namespace",
            id="trigger-agent-named-agent",
        ),
        pytest.param(
            config_with(derived_variables=[
                derived_var("done", {"type": "tool_response", "tool": "world"})]),
            "context_variables.derived_variables[0].triggers[0].tool: world is a namespace",
            id="trigger-tool-named-world",
        ),
        pytest.param(
            config_with(
                derived_variables=[derived_var("done", says("A", "DONE"))],
                handoffs=[{"source_agent": "A", "target_agent": "agent",
                           "condition": "${done}"}],
            ),
            "handoffs[0].target_agent: agent is a namespace",
            id="handoff-to-agent",
        ),
    ],
)
def test_namespace_names_are_reserved(document: dict[str, Any], expected: str) -> None:
    found = problems(document)
    assert any(problem.startswith(expected) for problem in found), found


def test_too_many_mappings_are_refused_and_checking_stays_linear() -> None:
    many = [{"tool": "t", "field": "f", "to": f"agent.k{i}"} for i in range(MAX_OUTPUTS + 1)]
    assert problems(config(*many)) == [
        f"outputs: list should have at most {MAX_OUTPUTS} items after validation, "
        f"not {MAX_OUTPUTS + 1}"
    ]
    deep = ".".join(f"k{i}" for i in range(15))
    hostile = [{"tool": "t", "field": "f", "to": f"agent.p{i}.{deep}"} for i in range(MAX_OUTPUTS)]
    started = time.perf_counter()
    parse_config(config(*hostile))
    assert time.perf_counter() - started < 2


# -- applying them ----------------------------------------------------------------------------
def run(*outputs: dict[str, Any]) -> RunState:
    return RunState(config(*outputs), BASE)


@pytest.mark.parametrize(
    ("event", "path", "value", "result"),
    [
        pytest.param(
            tool("extract_keywords", "success", {"keywords": ["project X", "last 7 days"]}),
            "agent.intermediate.keywords", ["project X", "last 7 days"],
            [{**KEYWORDS, "written": True, "old": None, "new": ["project X", "last 7 days"]}],
            id="written",
        ),
        pytest.param(
            tool("extract_keywords", "success", {"other": 1}),
            "agent.intermediate.keywords", None,
            [{**KEYWORDS, "written": False, "reason": "data.keywords: absent from the response, "
              "agent.intermediate.keywords not written"}],
            id="missing-field",
        ),
        pytest.param(
            tool("extract_keywords", "error"), "agent.intermediate.keywords", None,
            [{**KEYWORDS, "written": False, "reason": "data.keywords: absent from the response, "
              "agent.intermediate.keywords not written"}],
            id="no-data",
        ),
        pytest.param(
            tool("extract_keywords", data={"keywords": None}), "agent.intermediate.keywords",
            None, [{**KEYWORDS, "written": True, "old": None, "new": None}],
            id="null-is-a-value",
        ),
        pytest.param(
            tool("weather", data={"today": {"sky": "clear"}}), "world.weather.today.sky", "clear",
            [{**WEATHER, "written": True, "old": None, "new": {"sky": "clear"}}],
            id="world",
        ),
        pytest.param(
            tool("save", "success", {"keywords": ["x"]}), "agent.intermediate.keywords", None,
            None, id="another-tool",
        ),
    ],
)
def test_a_tool_response_applies_its_mappings(
    event: dict[str, Any], path: str, value: Any, result: list[dict[str, Any]] | None
) -> None:
    state = run(KEYWORDS, WEATHER)
    applied = state.apply(event).as_dict()
    assert state.get(path) == value
    assert applied.get("outputs") == result


def test_the_write_is_recorded_with_its_tool_and_seq_and_overwritten_by_the_next() -> None:
    state = run(KEYWORDS)
    state.apply(text("Planner", "go"))
    state.apply(tool("extract_keywords", data={"keywords": ["a"]}))
    applied = state.apply(tool("extract_keywords", data={"keywords": ["b"]}))
    assert applied.outputs[0].old == ["a"] and applied.outputs[0].new == ["b"]
    assert state.to_dict()["writes"] == {
        "agent.intermediate.keywords": {"tool": "extract_keywords", "field": "keywords", "seq": 3}
    }
    assert state.nodes["extract_keywords"] == {"keywords": ["b"]}  # the node still has it all


def test_an_oversized_value_is_not_written_and_the_result_says_so() -> None:
    state = run(KEYWORDS)
    big = ["x" * 100] * (OUTPUT_VALUE_MAX_BYTES // 100)
    applied = state.apply(tool("extract_keywords", data={"keywords": big}))
    assert state.get("agent.intermediate.keywords") is None
    assert not applied.outputs[0].written
    assert "OUTPUT_VALUE_MAX_BYTES" in applied.outputs[0].reason


def test_a_path_blocked_by_a_runtime_value_is_not_written() -> None:
    state = run(KEYWORDS)
    state.set("agent.intermediate", "a string")
    applied = state.apply(tool("extract_keywords", data={"keywords": ["a"]}))
    assert state.get("agent.intermediate") == "a string"
    assert applied.outputs[0].reason.startswith("to: ")


def test_one_response_writes_every_mapping_of_its_tool_in_order() -> None:
    lang = {"tool": "extract_keywords", "field": "lang", "to": "world.lang"}
    state = run(KEYWORDS, lang)
    applied = state.apply(tool("extract_keywords", data={"keywords": ["k"], "lang": "de"}))
    assert [write.to for write in applied.outputs] == [KEYWORDS["to"], "world.lang"]
    assert state.agent == {"intermediate": {"keywords": ["k"]}}
    assert state.world == {"lang": "de"}


# -- templates ----------------------------------------------------------------------------------
def test_seed_004_plan_reads_what_the_previous_node_wrote() -> None:
    state = run(KEYWORDS, DOCUMENTS)
    state.set("agent.plan.initial_objective", "find the project X report")
    assert state.resolve("Extract: {{agent.plan.initial_objective}}").text == (
        "Extract: find the project X report"
    )
    state.apply(tool("extract_keywords", data={"keywords": ["project X"]}))
    resolution = state.resolve("Search {{agent.intermediate.keywords}} for {{world.user}}")
    assert resolution.text == 'Search ["project X"] for {{world.user}}'
    assert resolution.unresolved == ["world.user"]


@pytest.mark.parametrize(
    ("template", "text", "unresolved"),
    [
        pytest.param("{{agent.k}}", "v", [], id="namespace"),
        pytest.param("{{agent}}", '{"k":"v"}', [], id="whole-namespace"),
        pytest.param("{{agent.text}}", "{{agent.text}}", ["agent.text"], id="namespace-wins"),
        pytest.param("{{max_items}}", "25", [], id="variables-as-before"),
        pytest.param("{{world.k}}", "{{world.k}}", ["world.k"], id="empty-world"),
    ],
)
def test_resolve_with_namespaces(template: str, text: str, unresolved: list[str]) -> None:
    resolution = resolve(
        template,
        variables={"max_items": 25},
        node_outputs={"agent": {"text": "a node named agent"}},
        namespaces={"agent": {"k": "v"}, "world": {}},
    )
    assert (resolution.text, resolution.unresolved) == (text, unresolved)


def test_without_namespaces_resolve_is_unchanged() -> None:
    resolution = resolve("{{agent.text}}", variables={}, node_outputs={"agent": {"text": "hi"}})
    assert resolution.text == "hi"


@pytest.mark.parametrize(
    ("template", "flagged"),
    [
        pytest.param("{{agent.intermediate.keywords}}", [], id="mapped"),
        pytest.param("{{agent.intermediate.keywords.0}}", [], id="inside-a-mapped-value"),
        pytest.param("{{agent.intermediate}}", [], id="above-a-mapped-path"),
        pytest.param("{{agent}}", [], id="the-namespace"),
        pytest.param("{{agent.intermediate.summary}}", ["agent.intermediate.summary"],
                     id="unmapped-sibling"),
        pytest.param("{{world.weather}}", ["world.weather"], id="unmapped-world"),
        pytest.param("{{agent." + "x." * 5000 + "y}}", ["agent." + "x." * 5000 + "y"],
                     id="hostile-length"),
    ],
)
def test_lint_flags_paths_no_mapping_writes(template: str, flagged: list[str]) -> None:
    issues = lint_templates({"SearchAgent.prompt": template}, config(KEYWORDS))
    assert [issue.reference for issue in issues] == flagged
    for issue in issues:
        assert str(issue).startswith(f"SearchAgent.prompt: {{{{{issue.reference}}}}}: no output "
                                     f"mapping writes {issue.reference}")


# -- persistence and determinism ----------------------------------------------------------------
def test_snapshots_keep_the_namespaces_and_older_snapshots_load() -> None:
    state = run(KEYWORDS)
    state.apply(tool("extract_keywords", data={"keywords": ["a"]}))
    restored = RunState.from_dict(config(KEYWORDS), state.to_dict())
    assert restored.to_dict() == state.to_dict()
    older = {k: v for k, v in state.to_dict().items() if k not in ("agent", "world", "writes")}
    assert RunState.from_dict(config(KEYWORDS), older).agent == {}


_event = st.one_of(
    st.builds(
        lambda tool_, field, value: tool(tool_, data={field: value}),
        st.sampled_from(["extract_keywords", "search_documents", "weather", "save"]),
        st.sampled_from(["keywords", "document_list", "today", "other"]),
        st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=5),
                  st.lists(st.text(max_size=3), max_size=3)),
    ),
    st.builds(lambda words: text("Planner", words), st.text(max_size=5)),
    st.just(tool("extract_keywords")),
)


@settings(max_examples=150, deadline=None)
@given(events=st.lists(_event, max_size=25), cut=st.integers(0, 25))
def test_replay_and_resume_rebuild_the_namespaces_exactly(
    events: list[dict[str, Any]], cut: int
) -> None:
    document = config(KEYWORDS, DOCUMENTS, WEATHER)
    live = RunState(document, BASE)
    results = [live.apply(event).as_dict() for event in events]
    assert replay(document, BASE, events).to_dict() == live.to_dict()
    # resumed from a snapshot part-way, the rest applies to the same state and results
    resumed = replay(document, BASE, events[:cut])
    resumed = RunState.from_dict(document, resumed.to_dict())
    assert [resumed.apply(event).as_dict() for event in events[cut:]] == results[cut:]
    assert resumed.to_dict() == live.to_dict()
