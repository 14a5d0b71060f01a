"""docs/format.md: a condition the engine accepts is a ContextExpression AG2 accepts, and both
evaluate it the same way (issue 13 item 7). Skipped without the ag2 extra (conftest)."""

from __future__ import annotations

import keyword
import re

import pytest
from autogen.agentchat.group import ContextExpression, ContextVariables
from contextadmin_sdk.engine import ConditionError, condition_names, evaluate_condition
from contextadmin_sdk.engine.format import NAME_MAX_CHARS, NAME_PATTERN, ConfigError, parse_config
from hypothesis import given
from hypothesis import strategies as st

ACCEPTED = [
    "${interview_complete}",
    "${monetization_enabled} and ${interview_complete}",
    "${a}",
    "${a1} and ${b2}",
    "${x_1_y} and ${z}",
    "${true} and ${none}",  # lower-case, so plain names to Python too
    "${" + "a" * NAME_MAX_CHARS + "}",
]
REJECTED = [
    "  ${a_flag}",
    "${a_flag}\n",
    "${ a_flag }",
    "${a_flag} AND ${b_flag}",
    "${a_flag}  and ${b_flag}",
    "${a_flag}\nand ${b_flag}",
    "${a_flag} and",
    "not ${a_flag}",
    "${a_flag} or ${b_flag}",
    "${a} and ${b} and ${c}",
    "${a}and${b}",
    "len(${a})",
    "${a} == 1",
]


def ag2_holds(expr: str, values: dict[str, bool]) -> bool:
    return bool(ContextExpression(expr).evaluate(ContextVariables(data=dict(values))))


@pytest.mark.parametrize("expr", ACCEPTED)
def test_every_accepted_form_parses_and_evaluates_alike_in_ag2(expr: str) -> None:
    names = condition_names(expr)
    for pattern in range(2 ** len(names)):
        values = {name: bool(pattern >> i & 1) for i, name in enumerate(names)}
        assert ag2_holds(expr, values) == evaluate_condition(expr, values)


@pytest.mark.parametrize("expr", REJECTED)
def test_forms_ag2_would_choke_on_are_rejected_by_us(expr: str) -> None:
    with pytest.raises(ConditionError):
        condition_names(expr)


def test_a_missing_name_raises_in_ag2_but_never_holds_for_us() -> None:
    """Why attach() leaves such rules unregistered: AG2 would raise KeyError mid-chat."""
    with pytest.raises(KeyError):
        ag2_holds("${monetization_enabled} and ${interview_complete}", {"interview_complete": True})
    assert not evaluate_condition("${monetization_enabled}", {"interview_complete": True})


names = st.from_regex(NAME_PATTERN, fullmatch=True).filter(
    lambda name: len(name) <= NAME_MAX_CHARS and not keyword.iskeyword(name)
)


@given(first=names, second=st.one_of(st.none(), names), a=st.booleans(), b=st.booleans())
def test_generated_conditions_parse_and_evaluate_alike_in_ag2(
    first: str, second: str | None, a: bool, b: bool
) -> None:
    if second is None or second == first:
        expr, values = f"${{{first}}}", {first: a}
    else:
        expr, values = f"${{{first}}} and ${{{second}}}", {first: a, second: b}
    assert condition_names(expr) == tuple(values)
    assert ag2_holds(expr, values) == evaluate_condition(expr, values)


@pytest.mark.parametrize("name", ["and", "if", "is", "class", "lambda"])
def test_keyword_names_are_refused_because_ag2_cannot_parse_them(name: str) -> None:
    assert re.fullmatch(NAME_PATTERN, name)
    with pytest.raises(SyntaxError):
        ContextExpression(f"${{{name}}}")
    with pytest.raises(ConditionError):
        condition_names(f"${{{name}}}")


@pytest.mark.parametrize("name", ["and", "if", "class"])
def test_the_format_refuses_a_variable_named_like_a_keyword(name: str) -> None:
    document = {
        "context_variables": {
            "derived_variables": [
                {"name": name, "default": False, "triggers": [
                    {"type": "agent_text", "agent": "InterviewAgent", "match": {"equals": "NEXT"}}
                ]}
            ]
        }
    }
    with pytest.raises(ConfigError) as raised:
        parse_config(document)
    assert [issue.path for issue in raised.value.issues] == [
        "context_variables.derived_variables[0].name"
    ]
    assert "Python keyword" in raised.value.issues[0].message
