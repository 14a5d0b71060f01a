"""validate_event's shortcut for the events of every turn: it decides exactly as the full rules."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from contextadmin_sdk.engine import TEXT_MAX_CHARS, validate_event
from contextadmin_sdk.engine.format import IDENTIFIER_MAX_CHARS, INT64_MAX
from hypothesis import given, settings
from hypothesis import strategies as st


def full_rules(event: dict[str, Any]) -> list[str]:
    """The full rules alone: a mapping that is not a dict never takes the shortcut."""
    return validate_event(MappingProxyType(event))


def sized(limit: int) -> st.SearchStrategy[str]:
    """Names and texts around a length limit, blank ones and odd characters."""
    return st.one_of(
        st.text(max_size=8),
        st.sampled_from(["", " ", "\t", "Asker", "a b", "é"]),
        st.integers(min_value=limit - 1, max_value=limit + 1).map(lambda n: "x" * n),
    )


NUMBERS = st.one_of(
    st.integers(min_value=-2, max_value=3),
    st.sampled_from([INT64_MAX, INT64_MAX + 1, True, False, 1.0, 0.5]),
)
VALUES = {
    "type": st.sampled_from(["agent_text", "handoff", "tool_response", "nope", None, 1]),
    "agent": st.one_of(sized(IDENTIFIER_MAX_CHARS), NUMBERS, st.just({"name": "Asker"})),
    "sender": sized(IDENTIFIER_MAX_CHARS),
    "text": st.one_of(sized(TEXT_MAX_CHARS), NUMBERS, st.none()),
    "target": st.one_of(sized(IDENTIFIER_MAX_CHARS), NUMBERS, st.none()),
    "rule": st.one_of(NUMBERS, st.none(), st.just("0")),
    "seq": st.one_of(NUMBERS, st.none()),
    "tool": sized(IDENTIFIER_MAX_CHARS),
    "extra": st.just(1),
}


@st.composite
def turn_events(draw: st.DrawFn) -> dict[str, Any]:
    """agent_text / handoff shaped events, valid or nearly so, with a field or two off."""
    type_ = draw(st.sampled_from(["agent_text", "handoff"]))
    base = {"type": type_, "agent": "Asker"}
    base.update({"text": "Hi."} if type_ == "agent_text" else {"target": "Answerer", "rule": 0})
    keys = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=2, unique=True))
    for key in keys:
        base[key] = draw(VALUES[key])
    for key in draw(st.lists(st.sampled_from(sorted(base)), max_size=1)):
        del base[key]
    return base


@settings(max_examples=600, deadline=None)
@given(turn_events())
def test_the_turn_shortcut_decides_as_the_full_rules(event: dict[str, Any]) -> None:
    assert validate_event(event) == full_rules(event)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "agent_text", "agent": "Asker", "text": "Question?"},
        {"type": "agent_text", "agent": "Asker", "text": "", "seq": 7},
        {"type": "handoff", "agent": "Asker", "target": "Answerer"},
        {"type": "handoff", "agent": "Asker", "target": "Answerer", "rule": 1, "seq": 2},
    ],
)
def test_plain_turn_events_are_valid(event: dict[str, Any]) -> None:
    assert validate_event(event) == [] == full_rules(event)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"type": "agent_text", "agent": " ", "text": "x"}, "agent"),
        ({"type": "agent_text", "agent": "A" * (IDENTIFIER_MAX_CHARS + 1), "text": "x"}, "agent"),
        ({"type": "agent_text", "agent": "Asker", "text": "x" * (TEXT_MAX_CHARS + 1)}, "text"),
        ({"type": "agent_text", "agent": "Asker", "text": "x", "seq": True}, "seq"),
        ({"type": "agent_text", "agent": "Asker", "text": "x", "seq": 0}, "seq"),
        ({"type": "agent_text", "agent": "Asker", "text": "x", "extra": 1}, "extra"),
        ({"type": "agent_text", "agent": "Asker", "sender": "Asker", "text": "x"}, "sender"),
        ({"type": "handoff", "agent": "Asker", "target": ""}, "target"),
        ({"type": "handoff", "agent": "Asker", "target": "B", "rule": -1}, "rule"),
        ({"type": "handoff", "agent": "Asker", "target": "B", "rule": False}, "rule"),
        ({"type": "handoff", "agent": "Asker", "target": "B", "rule": None}, "rule"),
        ({"type": "handoff", "agent": "Asker", "target": "B", "rule": INT64_MAX + 1}, "rule"),
    ],
)
def test_turn_events_off_by_one_field_are_refused_naming_it(
    event: dict[str, Any], field: str
) -> None:
    problems = validate_event(event)
    assert problems == full_rules(event)
    assert [problem.split(":", 1)[0] for problem in problems] == [field]
