"""Out-of-contract arguments: the engine's public functions given ``None`` or an int where the
signature says ``str`` or ``Mapping`` raise ``TypeError`` naming the parameter (never an
``AttributeError`` from deep inside), and bad data of the right type keeps its own errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runs.engine import (
    DerivedContextManager,
    RunState,
    build_context,
    context_from_supplied,
    context_set_problem,
    evaluate_condition,
    handoffs_readiness,
    lint_templates,
    load_config,
    replay,
    resolve,
    resolve_json,
    resolve_system_message,
    validate_condition,
)

from .support import demo_config

CONFIG = demo_config()
PARSED = load_config(CONFIG).config
EVENT = {"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"}
NO = {"variables": {}, "node_outputs": {}}


def build(**overrides: Any) -> Any:
    arguments = {"workflow_name": "w", "enterprise_id": "e", "environ": {}, **overrides}
    return build_context(CONFIG, **arguments)


CASES: list[Any] = [
    pytest.param(lambda bad: resolve(bad, **NO), "template", id="resolve-template"),
    pytest.param(lambda bad: resolve("{{a}}", variables=bad, node_outputs={}), "variables",
                 id="resolve-variables"),
    pytest.param(lambda bad: resolve("{{a}}", variables={}, node_outputs=bad), "node_outputs",
                 id="resolve-node-outputs"),
    pytest.param(lambda bad: resolve_json({"a": "{{a}}"}, variables=bad, node_outputs={}),
                 "variables", id="resolve-json-variables"),
    pytest.param(lambda bad: resolve_json(["{{a}}"], variables={}, node_outputs=bad),
                 "node_outputs", id="resolve-json-node-outputs"),
    pytest.param(lambda bad: resolve_system_message(bad, {}), "template",
                 id="system-message-template"),
    pytest.param(lambda bad: resolve_system_message("{a}", bad), "variables",
                 id="system-message-variables"),
    pytest.param(lambda bad: RunState(CONFIG, bad), "base_context", id="run-state-base"),
    pytest.param(lambda bad: RunState(bad, {}), "config", id="run-state-config"),
    pytest.param(lambda bad: RunState(CONFIG, {}, environment=bad), "environment",
                 id="run-state-environment"),
    pytest.param(lambda bad: RunState(CONFIG, {}).get(bad), "path", id="run-state-get"),
    pytest.param(lambda bad: RunState(CONFIG, {}).set(bad, 1), "path", id="run-state-set"),
    pytest.param(lambda bad: replay(CONFIG, bad, []), "base_context", id="replay-base"),
    pytest.param(lambda bad: replay(CONFIG, {}, bad), "events", id="replay-events"),
    pytest.param(lambda bad: evaluate_condition("${interview_complete}", bad), "values",
                 id="evaluate-values"),
    pytest.param(lambda bad: evaluate_condition(bad, {}), "expr", id="evaluate-expr"),
    pytest.param(lambda bad: validate_condition("${interview_complete}", bad), "config",
                 id="validate-condition-config"),
    pytest.param(lambda bad: build(workflow_name=bad), "workflow_name",
                 id="build-context-workflow-name"),
    pytest.param(lambda bad: build(enterprise_id=bad), "enterprise_id",
                 id="build-context-enterprise-id"),
    pytest.param(lambda bad: build(environ=bad), "environ", id="build-context-environ"),
    pytest.param(lambda bad: context_from_supplied(CONFIG, bad, workflow_name="w",
                                                   enterprise_id="e"), "supplied",
                 id="supplied-context"),
    pytest.param(lambda bad: context_from_supplied(CONFIG, {}, workflow_name="w",
                                                   enterprise_id=bad), "enterprise_id",
                 id="supplied-enterprise-id"),
    pytest.param(lambda bad: DerivedContextManager(bad), "config", id="derived-manager"),
    pytest.param(lambda bad: DerivedContextManager(CONFIG).observe(EVENT, bad), "values",
                 id="observe-values"),
    pytest.param(lambda bad: DerivedContextManager(CONFIG).observe(bad, {}), "event",
                 id="observe-event"),
    pytest.param(lambda bad: load_config(bad), "config", id="load-config"),
    pytest.param(lambda bad: context_set_problem(PARSED, bad, 1, environment="development"),
                 "name", id="context-set-name"),
    pytest.param(lambda bad: lint_templates(bad, CONFIG), "templates", id="lint-templates"),
    pytest.param(lambda bad: handoffs_readiness(PARSED, bad), "values", id="readiness-values"),
    pytest.param(lambda bad: handoffs_readiness(bad, {}), "config", id="readiness-config"),
]


@pytest.mark.parametrize("bad", [None, 7], ids=["none", "int"])
@pytest.mark.parametrize(("call", "parameter"), CASES)
def test_out_of_contract_arguments_raise_type_error_naming_the_parameter(
    call: Callable[[Any], Any], parameter: str, bad: Any
) -> None:
    with pytest.raises(TypeError) as info:
        call(bad)
    assert str(info.value).startswith(f"{parameter}: must be ")
    assert type(bad).__name__ in str(info.value)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        pytest.param(lambda: RunState(CONFIG, {}, environment="staging"), ValueError,
                     id="unknown-environment-is-bad-data"),
        pytest.param(lambda: load_config({"context_variables": []}), ValueError,
                     id="invalid-config-is-bad-data"),
        pytest.param(lambda: RunState(CONFIG, {}).apply(None), ValueError,  # type: ignore[arg-type]
                     id="an-event-that-is-not-an-object-is-an-event-error"),
    ],
)
def test_bad_data_of_the_right_type_keeps_its_value_error(
    call: Callable[[], Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("config", [None, 7, []], ids=["none", "int", "list"])
def test_build_context_takes_a_config_that_is_no_config_as_an_invalid_one(config: Any) -> None:
    """Seed 000: an invalid context_variables.json gives a warning and the minimal base."""
    context = build_context(config, workflow_name="w", enterprise_id="e", environ={})
    assert set(context.values) == {"enterprise_id", "workflow_name", "context_aware",
                                   "monetization_enabled"}
    assert context.warnings[-2].startswith(
        "invalid context_variables.json at (document): config: must be a config"
    )
