"""A tool that writes a derived flag (seed 000), and changes the run refuses, on real AG2 Classic
chats with scripted agents: what the chat routes on, the adapter reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.engine import replay
from contextadmin_sdk.integrations.autogen import attach

from .chats import (
    ToolCall,
    config,
    del_var,
    deleting_reply,
    derived,
    env_flag,
    raise_tier,
    save_plan,
    set_var,
    two_stage_pattern,
)
from .live import api

INTERVIEW_DONE = derived(
    "interview_complete",
    {"type": "agent_text", "agent": "InterviewAgent", "match": {"equals": "NEXT"}},
)
PLAN_SAVED = derived("plan_saved")  # no trigger: only the tool sets it
RULES = [
    {"source_agent": "InterviewAgent", "target_agent": "Planner",
     "condition": "${interview_complete}"},
    {"source_agent": "Planner", "target_agent": "Closer", "condition": "${plan_saved}"},
]
CONFIG = config(INTERVIEW_DONE, PLAN_SAVED, handoffs=RULES)
WORKFLOW = "PlanSaving"


def plan_chat(*tools: Any) -> Any:
    calls = [ToolCall(tool.__name__) for tool in tools]
    return two_stage_pattern(
        interview=["NEXT"], answers=[], planner=[*calls, "Planned."], tools=list(tools)
    )


def speakers(result: Any) -> list[str]:
    return [message.get("name") for message in result.chat_history]


def run(pattern: Any, session: Any) -> Any:
    with session:
        result, _, _ = initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=20)
    return result


def test_a_tool_setting_a_derived_flag_is_a_flip_and_the_chat_routes_on_it() -> None:
    pattern = plan_chat(save_plan)
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme", environ={})
    result = run(pattern, session)

    # AG2 routes Planner -> Closer on ${plan_saved} ...
    assert speakers(result)[-2:] == ["Planner", "Closer"]
    # ... and the run says why: a context_set flip set by tool save_plan
    [event] = [e for e in session.events if e["type"] == "context_set"]
    assert event == {"type": "context_set", "name": "plan_saved", "value": True,
                     "agent": "Planner", "tool": "save_plan", "seq": event["seq"]}
    flip = next(f for f in session.state.flips if f["name"] == "plan_saved")
    assert flip == {"name": "plan_saved", "value": True, "trigger_index": None, "seq": event["seq"],
                    "cause": {"type": "context_set", "tool": "save_plan", "agent": "Planner"}}
    assert [f.name for f in session.flips] == ["interview_complete", "plan_saved"]
    handoff = [e for e in session.events if e["type"] == "handoff"][-1]
    assert (handoff["agent"], handoff["target"], handoff["rule"]) == ("Planner", "Closer", 1)
    assert handoff["seq"] > event["seq"]
    assert session.state.context == session.context.to_dict()
    assert session.warnings == []
    # replay of the adapter's own log gives the same state
    again = replay(CONFIG, _base(session), session.events)
    assert again.to_dict() == session.state.to_dict()


def _base(session: Any) -> dict[str, Any]:
    """The run's base context: its context before any event (derived flags at defaults)."""
    base = dict(session.state.context)
    base.update({"interview_complete": False, "plan_saved": False})
    return base


def test_a_refused_change_is_a_warning_and_the_chat_goes_on() -> None:
    pattern = plan_chat(raise_tier, save_plan)
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme", environ={})
    result = run(pattern, session)

    assert speakers(result)[-1] == "Closer"  # not interrupted: save_plan still routed the chat
    [warning] = [e for e in session.events if e["type"] == "warning"]
    assert warning == {
        "type": "warning", "name": "product_tier", "value": "gold", "agent": "Planner",
        "tool": "raise_tier", "rule": "constant",
        "text": "name: declarative variable product_tier is a constant: it never changes "
                "during a run",
        "seq": warning["seq"],
    }
    assert session.warnings == [
        "tool raise_tier agent Planner set product_tier to 'gold': refused (name: declarative "
        "variable product_tier is a constant: it never changes during a run); recorded as a "
        "warning event"
    ]
    assert session.state.get("execution.warnings") == 1
    # The run's value is back in the chat's own context: AG2 routes on what the run holds.
    assert session.state.context["product_tier"] == "beta" == session.context["product_tier"]


@pytest.mark.parametrize(
    ("name", "value", "environ", "restored"),
    [
        pytest.param("plan_saved", "yes", {}, False, id="derived-flag-not-boolean"),
        pytest.param("beta_features", "yes", {}, False, id="environment-wrong-type"),
        pytest.param("beta_features", True, {"ENVIRONMENT": "production"}, None,
                     id="environment-in-production"),
    ],
)
def test_a_refused_value_is_put_back_before_the_chat_routes_on_it(
    name: str, value: Any, environ: dict[str, str], restored: Any
) -> None:
    cfg = config(INTERVIEW_DONE, PLAN_SAVED, handoffs=[*RULES[:1], {**RULES[1], "condition": (
        f"${{{name}}}")}], environment=[env_flag("beta_features", "BETA_FEATURES")])
    pattern = two_stage_pattern(
        interview=["NEXT"], answers=[],
        planner=[ToolCall("set_var", name=name, value=json.dumps(value)), "Planned."],
        tools=[set_var],
    )
    session = attach(pattern, cfg, workflow_name=WORKFLOW, enterprise_id="acme", environ=environ)
    result = run(pattern, session)

    assert "Closer" not in speakers(result)  # rule 1 did not route on the refused value
    assert [e for e in session.events if e["type"] == "handoff" and e.get("rule") == 1] == []
    [warning] = [e for e in session.events if e["type"] == "warning"]
    assert (warning["name"], warning["value"], warning["agent"], warning["tool"]) == (
        name, value, "Planner", "set_var"
    )
    if restored is None:  # the run has none: gone from the chat too
        assert name not in session.context.data and name not in session.state.context
    else:
        assert session.context[name] is restored is session.state.context[name]
    assert session.context.to_dict() == session.state.context


def test_a_deleted_declared_variable_is_warned_about_and_put_back_before_the_chat_routes() -> None:
    """A reply function deletes declared variables from the chat's shared ContextVariables:
    ``plan_saved`` (rule 1's condition: AG2's ContextExpression raises KeyError on a missing
    name) and the constant ``product_tier``. Each is a warning and the run's value is back
    before AG2 evaluates Planner's rules; an undeclared name stays the chat's own."""
    pattern = two_stage_pattern(interview=["NEXT"], answers=[], planner=["Planned."])
    interviewer = pattern.agents[0]
    interviewer.register_reply(
        [ConversableAgent, None], deleting_reply("plan_saved", "product_tier", "scratch")
    )
    pattern.context_variables.set("scratch", 1)
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme", environ={})
    result = run(pattern, session)

    assert speakers(result)[-2:] == ["InterviewAgent", "Planner"]  # rule 0, and no KeyError
    warnings = [e for e in session.events if e["type"] == "warning"]
    assert [(e["name"], e["value"], e["rule"], e["agent"]) for e in warnings] == [
        ("product_tier", None, "deleted", "InterviewAgent"),
        ("plan_saved", None, "deleted", "InterviewAgent"),
    ]
    assert all("the run keeps its value" in e["text"] for e in warnings)
    assert session.warnings[0].startswith("agent InterviewAgent deleted product_tier: refused")
    assert (session.context["product_tier"], session.context["plan_saved"]) == ("beta", False)
    assert "scratch" not in session.context.data  # the chat's own name: not reported
    assert session.context.to_dict() == session.state.context


def test_a_tools_del_leaves_the_chats_value_so_nothing_is_reported() -> None:
    """AG2 Classic gives a tool a copy of the chat's context and merges its ReplyResult back
    with ``update``: ``del context_variables[name]`` in a tool never reaches the chat."""
    pattern = two_stage_pattern(
        interview=["NEXT"],
        answers=[],
        planner=[ToolCall("del_var", name="product_tier"), "Planned."],
        tools=[del_var],
    )
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme", environ={})
    run(pattern, session)
    assert [e for e in session.events if e["type"] == "warning"] == []
    assert session.context["product_tier"] == "beta" == session.state.context["product_tier"]


# -- the same, reported to a live server -------------------------------------------------------
@pytest.fixture(scope="module")
def plan_site(daphne_server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    path: Path = tmp_path_factory.mktemp("plan") / "context_variables.json"
    path.write_text(json.dumps(CONFIG))
    daphne_server.manage("import_context", str(path), "--workflow", WORKFLOW)
    token = daphne_server.manage("create_api_token", "plan-saving").stdout.strip()
    return daphne_server, token


@pytest.mark.slow
def test_the_server_and_the_adapter_agree_on_the_explicit_flip_and_the_warning(
    plan_site: tuple[Any, str],
) -> None:
    server, token = plan_site
    pattern = plan_chat(raise_tier, save_plan)
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme", environ={},
                     reporter=RunReporter(server.url, token))
    run(pattern, session)
    assert session.reporter is not None and session.reporter.error is None

    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    assert state["state"]["context"] == session.state.context
    assert state["state"]["context"]["plan_saved"] is True
    assert state["state"]["execution"]["warnings"] == 1
    assert [f["cause"] for f in state["flips"] if f["name"] == "plan_saved"] == [
        {"type": "context_set", "tool": "save_plan", "agent": "Planner"}
    ]
    events = api(server.url, token, f"/api/runs/{session.run_id}/events/")["events"]
    assert [e["type"] for e in events if e["type"] in ("warning", "context_set")] == [
        "warning", "context_set"
    ]
