"""A day of use of AG2 Classic: entry points, patterns and tools a team with existing group
chats uses, on real chats with scripted agents. What the chat routes on, the inspector shows.

No ``from __future__ import annotations`` here: this module defines an AG2 tool.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from autogen import UserProxyAgent
from autogen.agentchat import a_run_group_chat, initiate_group_chat, run_group_chat
from autogen.agentchat.group import (
    AgentNameTarget,
    AgentTarget,
    ContextVariables,
    OnCondition,
    ReplyResult,
    RevertToUserTarget,
    StringLLMCondition,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import DefaultPattern, RoundRobinPattern
from autogen.events.agent_events import InputRequestEvent
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.integrations.autogen import attach
from contextadmin_sdk.integrations.autogen.scripted import scripted_agent, scripted_tool_agent

from runs.demo_chats.autogen_chat import OPENING, demo_pattern

from .chats import INTERVIEW_DONE, ToolCall, attach_demo_chat, config, derived, two_stage_pattern
from .live import api

WORKFLOW = "DayOfUse"
RULES = [
    {"source_agent": "InterviewAgent", "target_agent": "Closer",
     "condition": "${interview_complete}"},
    {"source_agent": "Planner", "target_agent": "Closer", "condition": "${plan_saved}"},
]
CONFIG = config(INTERVIEW_DONE, derived("plan_saved"), handoffs=RULES)
DEMO_FLIPS = ["interview_complete", "context_saved", "handoffs_reviewed"]


def save_and_close(context_variables: ContextVariables) -> ReplyResult:
    """Save the plan, and route to the Closer itself (a ReplyResult with a target)."""
    context_variables["plan_saved"] = True
    return ReplyResult(
        message="Plan saved.", context_variables=context_variables, target=AgentNameTarget("Closer")
    )


@pytest.fixture(scope="module")
def day_site(site: tuple[Any, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    server, token = site
    path: Path = tmp_path_factory.mktemp("day") / "context_variables.json"
    path.write_text(json.dumps(CONFIG))
    server.manage("import_context", str(path), "--workflow", WORKFLOW)
    return server, token


def server_state(server: Any, token: str, run_id: str | None) -> dict[str, Any]:
    return dict(api(server.url, token, f"/api/runs/{run_id}/state/"))


def speakers(session: Any) -> list[str]:
    return [e["agent"] for e in session.events if e["type"] == "agent_text"]


def assert_demo_run(server: Any, token: str, session: Any, pattern: Any) -> None:
    """The demo's flips and path, on the server and in the chat's own context."""
    state = server_state(server, token, session.run_id)
    assert [f["name"] for f in state["flips"]] == DEMO_FLIPS
    assert state["state"]["context"] == pattern.context_variables.to_dict()
    assert state["seq"] == session.state.last_seq == 12
    assert state["state"]["execution"]["status"] == "completed"
    assert session.warnings == []


# -- AG2's event API: the chat runs on a thread (or task) of its own ------------------------------
@pytest.mark.slow
def test_run_group_chat_routes_on_its_flips_and_reports_them(day_site: tuple[Any, str]) -> None:
    """run_group_chat runs the chat on AG2's thread with AG2's stream: still observed in time."""
    server, token = day_site
    pattern = demo_pattern()
    session = attach_demo_chat(pattern, reporter=RunReporter(server.url, token))
    with session:
        response = run_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
        kinds = [type(event).__name__ for event in response.events]
    assert "RunCompletionEvent" in kinds  # the caller still gets every AG2 event
    assert response.last_speaker == "HandoffsAgent"  # hand-offs 0 and 1 routed the chat
    assert_demo_run(server, token, session, pattern)


@pytest.mark.slow
async def test_a_run_group_chat_routes_on_its_flips_and_reports_them(
    day_site: tuple[Any, str],
) -> None:
    """a_run_group_chat runs the chat in a task with its own stream: still observed in time."""
    server, token = day_site
    pattern = demo_pattern()
    session = attach_demo_chat(pattern, reporter=RunReporter(server.url, token))
    with session:
        response = await a_run_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
        await response.process()
    assert await response.last_speaker == "HandoffsAgent"
    assert_demo_run(server, token, session, pattern)


async def test_a_human_answering_a_run_group_chat_is_heard(day_site: tuple[Any, str]) -> None:
    """A UserProxyAgent asks its human through a_run_group_chat's async stream: the session's
    stream must await the answer, not hand AG2 a coroutine."""
    server, token = day_site
    user = UserProxyAgent("user", human_input_mode="ALWAYS", code_execution_config=False)
    interview = scripted_agent("InterviewAgent", ["What are you building?", "NEXT"])
    interview.handoffs.set_after_work(RevertToUserTarget())
    closer = scripted_agent("Closer", ["Closing."])
    closer.handoffs.set_after_work(TerminateTarget())
    planner = scripted_agent("Planner", [])
    pattern = DefaultPattern(
        initial_agent=interview, agents=[interview, planner, closer], user_agent=user
    )
    session = attach(
        pattern,
        CONFIG,
        workflow_name=WORKFLOW,
        enterprise_id="acme",
        environ={},
        reporter=RunReporter(server.url, token),
    )
    answers = ["A marketplace."]
    with session:
        response = await a_run_group_chat(pattern=pattern, messages="Start.", max_rounds=10)
        async for event in response.events:
            if isinstance(event, InputRequestEvent):
                await event.content.respond(answers.pop(0))
    assert [(e["agent"], e["text"]) for e in session.events if e["type"] == "agent_text"] == [
        ("user", "Start."),
        ("InterviewAgent", "What are you building?"),
        ("user", "A marketplace."),
        ("InterviewAgent", "NEXT"),
        ("Closer", "Closing."),
    ]
    state = server_state(server, token, session.run_id)
    assert state["state"]["context"]["interview_complete"] is True
    assert state["state"]["execution"]["status"] == "completed"


# -- patterns that set every agent's after-work as the chat starts --------------------------------
def test_round_robin_hands_off_on_the_turn_right_after_the_flip() -> None:
    """RoundRobinPattern calls set_after_work on every agent in prepare_group_chat: the rule
    must still route the turn after the flip, not a whole round later."""
    user = scripted_agent("user", ["Hi.", "More."])
    interview = scripted_agent("InterviewAgent", ["What?", "NEXT"])
    planner = scripted_agent("Planner", ["Planning."])
    closer = scripted_agent("Closer", ["Closing."])
    pattern = RoundRobinPattern(
        initial_agent=interview, agents=[interview, planner, closer], user_agent=user
    )
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme", environ={})
    with session:
        initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=9)
    said = speakers(session)
    nexts = [i for i, e in enumerate(session.events) if e.get("text") == "NEXT"]
    after = session.events[nexts[0] + 1]
    assert (after["type"], after["target"], after.get("rule")) == ("handoff", "Closer", 0)
    assert said[: said.index("Closer")] == ["user", "InterviewAgent", "Planner"]
    assert said[said.index("Closer") + 1 :][:4] == ["user", "InterviewAgent", "Closer", "user"]


# -- a tool's ReplyResult with a target ----------------------------------------------------------
@pytest.mark.slow
def test_a_tool_routing_with_its_reply_result_is_named_as_the_flags_setter(
    day_site: tuple[Any, str],
) -> None:
    """AG2 sends a ReplyResult's hand-off before the tool's response: the flag it set is still
    "set by tool save_and_close", on the server as in the session."""
    server, token = day_site
    pattern = two_stage_pattern(
        interview=["NEXT"],
        answers=[],
        planner=[ToolCall("save_and_close"), "Planned."],
        tools=[save_and_close],
    )
    pattern.agents[0].handoffs.set_after_work(TerminateTarget())
    rules = [{**RULES[0], "target_agent": "Planner"}, RULES[1]]
    session = attach(
        pattern,
        {**CONFIG, "handoffs": [{"description": "", **rule} for rule in rules]},
        workflow_name=WORKFLOW,
        enterprise_id="acme",
        environ={},
        reporter=RunReporter(server.url, token),
    )
    with session:
        _, context, last = initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=10)
    assert last.name == "Closer" and context["plan_saved"] is True
    cause = {"type": "context_set", "tool": "save_and_close", "agent": "Planner"}
    assert [f.cause for f in session.flips if f.name == "plan_saved"] == [cause]
    state = server_state(server, token, session.run_id)
    assert [f["cause"] for f in state["flips"] if f["name"] == "plan_saved"] == [cause]
    assert state["state"]["context"] == context.to_dict()


# -- an LLM hand-off (OnCondition), scripted ------------------------------------------------------
def test_a_scripted_model_can_take_an_llm_hand_off() -> None:
    """AG2 rebuilds the client of an agent with OnConditions in its own hook, after the scripted
    agent's: the scripted model must still answer, and the run shows the hand-off."""
    interview = scripted_agent("InterviewAgent", ["NEXT"])
    closer = scripted_agent("Closer", ["Closing."])
    closer.handoffs.set_after_work(TerminateTarget())
    planner = scripted_tool_agent(
        "Planner", [ToolCall("transfer_to_Closer_1"), "Planned."], tools=[save_and_close]
    )
    planner.handoffs.add_llm_condition(
        OnCondition(target=AgentTarget(closer), condition=StringLLMCondition("When planned."))
    )
    pattern = DefaultPattern(
        initial_agent=interview,
        agents=[interview, planner, closer],
        user_agent=scripted_agent("user", []),
    )
    rules = [{**RULES[0], "target_agent": "Planner", "description": ""}]
    session = attach(
        pattern,
        {**CONFIG, "handoffs": rules},
        workflow_name=WORKFLOW,
        enterprise_id="acme",
        environ={},
    )
    with session:
        _, _, last = initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=10)
    assert last.name == "Closer"
    handoffs = [(e["agent"], e["target"]) for e in session.events if e["type"] == "handoff"]
    assert handoffs == [("InterviewAgent", "Planner"), ("Planner", "Closer")]


# -- misuse: a clear TypeError, never a traceback from the adapter --------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"context_variables": {"plan_saved": False}}, "must be an autogen.agentchat.group"),
        ({"agents": None}, "agents must be a list of ConversableAgents, not NoneType"),
    ],
)
def test_a_pattern_built_wrong_is_a_clear_type_error(options: dict[str, Any], message: str) -> None:
    """A dict for context_variables (AG2 shares one ContextVariables) or no agents list."""
    interview = scripted_agent("InterviewAgent", [])
    arguments: dict[str, Any] = {"initial_agent": interview, "agents": [interview], **options}
    pattern = DefaultPattern(**arguments)
    with pytest.raises(TypeError, match=message):
        attach(pattern, config(INTERVIEW_DONE), workflow_name="W", enterprise_id="e", environ={})


def test_a_chat_run_outside_the_session_is_warned_about() -> None:
    """Forgetting `with session:` left the run open and the flags unflipped, silently."""
    pattern = two_stage_pattern(interview=["NEXT"], answers=[])
    session = attach(pattern, CONFIG, workflow_name=WORKFLOW, enterprise_id="acme", environ={})
    initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=5)
    assert session.events == []
    assert [w for w in session.warnings if "outside `with session:`" in w] == [
        "a chat started on the attached pattern outside `with session:`: the session does not "
        "observe it (no flag flips, nothing is reported); run the chat inside `with session:`"
    ]
