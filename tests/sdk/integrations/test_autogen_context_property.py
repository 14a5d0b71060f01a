"""Nothing the chat changes is dropped silently, as a property of a real AG2
Classic chat reporting to a live Daphne: tools set random declared variables (all four
categories, the base included) to random values; after every turn each declared variable in the
chat's own context equals the server's state for the run (read through the state API), or a
``warning`` event stored on the server names that variable and the chat's value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import TerminateTarget
from autogen.agentchat.group.patterns import DefaultPattern
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.integrations.autogen import attach
from contextadmin_sdk.integrations.autogen.scripted import scripted_agent, scripted_tool_agent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import chats
from .chats import ToolCall
from .live import api

pytestmark = pytest.mark.slow

WORKFLOW = "EveryCategory"
CONFIG = {
    "context_variables": {
        "declarative_variables": [
            {"name": "product_tier", "type": "string", "value": "beta"},
            {"name": "max_items", "type": "integer", "value": 25},
        ],
        "database_variables": [
            {"name": "plan_owner", "type": "string", "source": {
                "type": "database", "database_name": "crm", "collection": "Plans",
                "search_by": "enterprise_id", "field": "owner"}},
        ],
        "environment_variables": [
            {"name": "beta_features", "type": "boolean",
             "source": {"type": "environment", "env_var": "BETA_FEATURES"}},
        ],
        "derived_variables": [
            {"name": "plan_saved", "type": "boolean", "default": False, "triggers": []},
            {"name": "worked", "type": "boolean", "default": False,
             "triggers": [{"type": "tool_response", "tool": "set_var"}]},
        ],
    },
    "handoffs": [],
}
NAMES = ["enterprise_id", "workflow_name", "context_aware", "monetization_enabled",
         "product_tier", "max_items", "plan_owner", "beta_features", "plan_saved", "worked"]
VALUES = st.one_of(
    st.booleans(), st.integers(-2, 30), st.sampled_from(["beta", "gold", "", "acme"]),
    st.none(), st.just(1.5),
)
SETS = st.lists(st.tuples(st.sampled_from(NAMES), VALUES), min_size=1, max_size=5)
MISSING = object()


@pytest.fixture(scope="module")
def every_category_site(
    daphne_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, str]:
    path: Path = tmp_path_factory.mktemp("every") / "context_variables.json"
    path.write_text(json.dumps(CONFIG))
    daphne_server.manage("import_context", str(path), "--workflow", WORKFLOW)
    token = daphne_server.manage("create_api_token", "every-category").stdout.strip()
    return daphne_server, token


@pytest.fixture
def probes() -> Iterator[list[Any]]:
    yield chats.PROBES
    chats.PROBES.clear()


def _encoded(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def unexplained(chat: dict[str, Any], server: dict[str, Any], warnings: list[Any]) -> list[str]:
    """The declared variables where the chat and the server differ with no warning saying so."""
    warned = {(w["name"], _encoded(w["value"])) for w in warnings}
    problems = []
    for name in NAMES:
        mine, theirs = chat.get(name, MISSING), server.get(name, MISSING)
        if mine is MISSING and theirs is MISSING:
            continue
        if type(mine) is type(theirs) and mine == theirs:
            continue
        if mine is not MISSING and (name, _encoded(mine)) in warned:
            continue
        problems.append(f"{name}: chat {mine!r}, server {theirs!r}, no warning")
    return problems


@settings(
    max_examples=25,  # 5 to 12 s in all against the live server
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sets=SETS, production=st.booleans())
def test_after_every_turn_the_chat_equals_the_server_or_a_warning_says_why(
    every_category_site: tuple[Any, str],
    probes: list[Any],
    sets: list[tuple[str, Any]],
    production: bool,
) -> None:
    server, token = every_category_site
    worker = scripted_tool_agent(
        "Worker",
        [ToolCall("set_var", name=name, value=json.dumps(value)) for name, value in sets],
        tools=[chats.set_var],
    )
    worker.handoffs.set_after_work(TerminateTarget())
    pattern = DefaultPattern(
        initial_agent=worker, agents=[worker], user_agent=scripted_agent("user", []),
        group_after_work=TerminateTarget(),
    )
    reporter = RunReporter(server.url, token)
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme",
                     environ={"ENVIRONMENT": "production"} if production else {},
                     reporter=reporter)
    found: list[str] = []
    turns: list[int] = []

    def check(chat: dict[str, Any], *, flush: bool = True) -> None:
        assert not flush or reporter.flush(10), "the server did not acknowledge the turn in time"
        state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
        events = api(server.url, token, f"/api/runs/{session.run_id}/events/")["events"]
        warnings = [event for event in events if event["type"] == "warning"]
        assert state["seq"] == session.state.last_seq
        found.extend(unexplained(chat, state["state"]["context"], warnings))

    def probe(context: Any) -> None:  # in the tool, before it sets: the previous turn is over
        turns.append(session.state.last_seq)
        try:
            check(context.to_dict())
        except Exception as exc:  # an exception in a tool would only reach AG2
            found.append(f"probe failed: {exc!r}")

    probes.append(probe)
    with session:
        initiate_group_chat(pattern=pattern, messages="Go.", max_rounds=4 * len(sets) + 4)
    assert len(turns) == len(sets)  # every set ran, and each turn was checked
    check(session.context.to_dict(), flush=False)  # and after the last (closed: all acked)
    assert found == []
    assert reporter.error is None
