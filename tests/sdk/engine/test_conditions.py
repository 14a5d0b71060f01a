"""Hand-off conditions: seed 000 "Handoff Routing Constraints" and docs/format.md."""

from __future__ import annotations

import re
from typing import Any

import pytest
from contextadmin_sdk.engine import (
    ConditionError,
    condition_names,
    evaluate_condition,
    validate_condition,
)
from contextadmin_sdk.engine.format import parse_config

from .support import config_with, derived_var, env_var, says

CATEGORIES = {
    "interview_complete": "derived",
    "monetization_enabled": "environment",
    "context_aware": "environment",
    "product_tier": "declarative",
    "concept_overview": "database",
}


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        pytest.param("${interview_complete}", ("interview_complete",), id="one"),
        pytest.param(
            "${monetization_enabled} and ${interview_complete}",
            ("monetization_enabled", "interview_complete"),
            id="and",
        ),
    ],
)
def test_valid_conditions(expr: str, names: tuple[str, ...]) -> None:
    assert condition_names(expr) == names
    assert validate_condition(expr, CATEGORIES) == []


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        pytest.param("", "may not be empty", id="empty"),
        pytest.param("   ", "may not be empty", id="blank"),
        pytest.param("not ${interview_complete}", '"not" is not allowed', id="not"),
        pytest.param("NOT ${interview_complete}", '"not" is not allowed', id="NOT"),
        pytest.param("!${interview_complete}", '"not" is not allowed', id="bang"),
        pytest.param("${a_flag} or ${interview_complete}", '"or" is not allowed', id="or"),
        pytest.param("${a_flag} || ${interview_complete}", '"or" is not allowed', id="pipes"),
        pytest.param("${max_items} > 3", "comparisons are not allowed", id="greater"),
        pytest.param("${product_tier} == 'beta'", "comparisons are not allowed", id="equals"),
        pytest.param("len(${items})", "functions are not allowed", id="function"),
        pytest.param("${a} and ${b} and ${c}", 'at most one "and"', id="two-ands"),
        pytest.param("${a} and", 'expected ${name} on both sides of "and"', id="dangling-and"),
        # Only the strict form: AG2's ContextExpression refuses each of these.
        pytest.param("  ${a_flag}", "no spaces or line breaks before or after", id="padded"),
        pytest.param("${a_flag}\n", "no spaces or line breaks before or after", id="newline"),
        pytest.param("${ a_flag }", "no spaces inside ${}: write ${a_flag}", id="spaces-inside"),
        pytest.param("${a_flag} AND ${b_flag}", 'lower-case "and"', id="AND"),
        pytest.param("${a_flag}  and ${b_flag}", 'one space on each side', id="double-space"),
        pytest.param("${a_flag}\nand ${b_flag}", 'one space on each side', id="split-lines"),
        pytest.param("interview_complete", "expected ${name}", id="bare-name"),
        pytest.param("${InterviewComplete}", "is not a lower_snake_case", id="bad-name"),
        pytest.param("${a} and ${a}", "referenced twice", id="same-twice"),
        pytest.param("${" + "a" * 600 + "}", "at most 500 characters", id="too-long"),
        pytest.param("When interview_complete is true", "expected ${name}", id="prose"),
    ],
)
def test_grammar_errors(expr: str, message: str) -> None:
    with pytest.raises(ConditionError, match=re.escape(message)):
        condition_names(expr)
    errors = validate_condition(expr, CATEGORIES)
    assert len(errors) == 1 and message in errors[0]


def test_non_string_condition() -> None:
    assert validate_condition(None, CATEGORIES) == [  # type: ignore[arg-type]
        "a condition must be a string like ${interview_complete}"
    ]


@pytest.mark.parametrize(
    ("expr", "errors"),
    [
        pytest.param("${interview_complete}", [], id="derived-routes"),
        pytest.param("${context_aware}", [], id="environment-routes"),
        pytest.param(
            "${product_tier}",
            [
                "declarative variable product_tier cannot route: "
                "only environment and derived variables can"
            ],
            id="declarative",
        ),
        pytest.param(
            "${concept_overview}",
            [
                "database variable concept_overview cannot route: "
                "only environment and derived variables can"
            ],
            id="database",
        ),
        pytest.param(
            "${ghost}",
            ["unknown variable ghost: declare it as an environment or derived variable"],
            id="unknown",
        ),
        pytest.param(
            "${ghost} and ${product_tier}",
            [
                "unknown variable ghost: declare it as an environment or derived variable",
                "declarative variable product_tier cannot route: "
                "only environment and derived variables can",
            ],
            id="both-reported",
        ),
    ],
)
def test_only_environment_and_derived_variables_route(expr: str, errors: list[str]) -> None:
    assert validate_condition(expr, CATEGORIES) == errors


CONFIG = config_with(
    declarative_variables=[{"name": "product_tier", "value": "beta"}],
    environment_variables=[env_var("monetization_enabled", "MONETIZATION_ENABLED")],
    derived_variables=[derived_var("interview_complete", says("InterviewAgent", "NEXT"))],
)


@pytest.mark.parametrize("form", ["raw-dict", "parsed-file", "categories"])
def test_validate_accepts_every_config_form(form: str) -> None:
    config: Any = {
        "raw-dict": CONFIG,
        "parsed-file": parse_config(CONFIG).config,
        "categories": parse_config(CONFIG).config.categories(),
    }[form]
    assert validate_condition("${monetization_enabled} and ${interview_complete}", config) == []
    assert validate_condition("${product_tier}", config) != []


@pytest.mark.parametrize(
    ("expr", "values", "expected"),
    [
        pytest.param("${a}", {"a": True}, True, id="true"),
        pytest.param("${a}", {"a": False}, False, id="false"),
        pytest.param("${a}", {}, False, id="missing-is-false"),
        pytest.param("${a} and ${b}", {"a": True, "b": True}, True, id="both"),
        pytest.param("${a} and ${b}", {"a": True, "b": False}, False, id="one-false"),
        pytest.param("${a} and ${b}", {"b": True}, False, id="production-drops-env-flag"),
        pytest.param("${a}", {"a": 1}, True, id="truthy-value"),
        pytest.param("${a}", {"a": ""}, False, id="falsy-value"),
    ],
)
def test_evaluate(expr: str, values: dict[str, Any], expected: bool) -> None:
    assert evaluate_condition(expr, values) is expected


def test_evaluate_refuses_an_invalid_condition() -> None:
    with pytest.raises(ConditionError):
        evaluate_condition("not ${a}", {"a": False})
