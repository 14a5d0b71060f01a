"""What the chat routes on, the inspector shows: real AG2 chats (scripted, LLM-free agents)
attached with the SDK, reporting to a real Daphne, watched in Debian Chromium. What AG2 itself
routed (the speakers it ran), the server's state API and the run page must agree."""

import itertools
import json
import re

import pytest
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import (
    AgentTarget,
    ContextExpression,
    ContextVariables,
    ExpressionContextCondition,
    OnContextCondition,
    ReplyResult,
    RevertToUserTarget,
    StringAvailableCondition,
)
from autogen.agentchat.group.patterns import DefaultPattern
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.engine.format.limits import PATH_MAX_EDGES
from contextadmin_sdk.integrations.autogen import attach
from contextadmin_sdk.integrations.autogen.scripted import scripted_agent
from playwright.sync_api import expect

from devservers.processes import manage
from tests.inspector.test_browser import open_run
from tests.sdk.integrations.chats import (
    INTERVIEW_DONE,
    TO_PLANNER,
    ToolCall,
    config,
    derived,
    two_stage_pattern,
)
from tests.sdk.integrations.live import api

# No ``from __future__ import annotations`` in this module: it defines an AG2 tool.
pytestmark = pytest.mark.browser

PATH_KEPT = PATH_MAX_EDGES  # execution.path keeps the latest 1,000 hand-offs


def imported(live, workflow: str, definitions: dict) -> dict:
    """Publish ``definitions`` as ``workflow`` on the live server (as an operator's import)."""
    path = live.workdir / f"{workflow}.json"
    path.write_text(json.dumps(definitions))
    manage(live.env, "import_context", str(path), "--workflow", workflow)
    return definitions


def ping_pong() -> DefaultPattern:
    """Two agents that hand the floor to each other after every turn (AG2 after-work hand-offs
    no rule declares), for as many rounds as the chat is given."""
    ping = scripted_agent("Ping", [], after="ping")
    pong = scripted_agent("Pong", [], after="pong")
    ping.handoffs.set_after_work(AgentTarget(pong))
    pong.handoffs.set_after_work(AgentTarget(ping))
    return DefaultPattern(initial_agent=ping, agents=[ping, pong],
                          user_agent=scripted_agent("user", []))


def test_a_chat_of_more_hand_offs_than_the_state_keeps_reads_as_the_server_keeps_it(page, live):
    """A page that watched the run, and one opened after it, show the hand-offs the server's
    state keeps (the latest 1,000), not a count of their own."""
    definitions = imported(live, "PingPong", config())
    pattern = ping_pong()
    reporter = RunReporter(live.url, live.secret)
    session = attach(pattern, definitions, workflow_name="PingPong", enterprise_id="acme",
                     environ={}, reporter=reporter)
    assert reporter.wait_started(10)
    open_run(page, session.run_id)  # watches the whole run live
    with session:
        result, _, _ = initiate_group_chat(pattern=pattern, messages="Start.",
                                           max_rounds=PATH_KEPT + 220)
    ran = [message["name"] for message in result.chat_history]
    handed = sum(1 for before, after in itertools.pairwise(ran[1:]) if before != after)
    assert handed > PATH_KEPT + 200  # AG2 handed the floor over more often than the state keeps
    state = api(live.url, live.secret, f"/api/runs/{session.run_id}/state/")
    path = state["state"]["execution"]["path"]
    assert len(path) == PATH_KEPT  # the server keeps the latest
    last = path[-1]
    taken = ",".join(str(e["seq"]) for e in path if (e["source"], e["target"]) == ("Pong", "Ping"))

    later = page.context.new_page()
    open_run(later, session.run_id)  # replays the run's last events onto a snapshot
    for shown in (page, later):
        expect(shown.locator("#graph-at")).to_have_text(f"final · after #{session.state.last_seq}")
        summary = shown.locator("#graph .graph-summary")
        expect(summary).to_contain_text(f"the latest {PATH_KEPT:,} hand-offs kept")
        expect(summary).to_contain_text(
            re.compile(rf"{last['source']} → {last['target']} at #{last['seq']}$"))
        # the edge counts the hand-offs the server's path holds: its title lists their events
        edge = shown.locator('#graph g.edge[data-source="Pong"][data-target="Ping"]')
        expect(edge).to_have_attribute("data-seqs", taken)


def path_of(state: dict) -> list[tuple]:
    return [(e["source"], e["target"], e["rule"], e["seq"])
            for e in state["state"]["execution"]["path"]]


def test_a_hand_off_of_the_teams_own_condition_is_on_the_path_not_lost(page, live):
    """The team's own AG2 hand-off (enabled by ``available`` once the interview is done) fires
    before the workflow's rule to another agent: the path shows the hand-off AG2 took, with no
    rule, and the workflow's rule as not taken (it was refused as rule 0's and lost)."""
    definitions = imported(live, "TeamsOwn", config(INTERVIEW_DONE, handoffs=[TO_PLANNER]))
    pattern = two_stage_pattern(interview=["Q?", "NEXT"], answers=["A."])
    interviewer, _, closer = pattern.agents
    interviewer.handoffs.add_after_work(OnContextCondition(
        target=AgentTarget(closer),
        condition=ExpressionContextCondition(ContextExpression("${interview_complete}")),
        available=StringAvailableCondition("interview_complete"),
    ))
    session = attach(pattern, definitions, workflow_name="TeamsOwn", enterprise_id="acme",
                     environ={}, reporter=RunReporter(live.url, live.secret))
    with session:
        result, _, _ = initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=20)
    ran = [message["name"] for message in result.chat_history]
    assert ran[-2:] == ["InterviewAgent", "Closer"]  # AG2 routed on the team's condition
    state = api(live.url, live.secret, f"/api/runs/{session.run_id}/state/")
    assert path_of(state) == [("InterviewAgent", "Closer", None, 5)]

    open_run(page, session.run_id)
    summary = page.locator("#graph .graph-summary")
    expect(summary).to_contain_text(
        re.compile(r"1 hand-off taken: InterviewAgent → Closer at #5$"))
    taken = page.locator('#graph g.edge.taken[data-source="InterviewAgent"]')
    expect(taken).to_have_count(1)
    expect(taken).to_have_attribute("data-target", "Closer")
    expect(taken).to_have_attribute("data-rule", "")  # drawn as "no rule"
    expect(taken.locator("text")).to_have_text("no rule")
    rule = page.locator('#graph g.edge[data-rule="0"]')
    expect(rule).to_have_attribute("data-taken", "false")
    expect(page.locator("#event-5")).to_contain_text("hands off to Closer")
    expect(page.locator("#event-5 .ev-text")).not_to_contain_text("rule")
    expect(page.locator("#event-5 .ev-passed")).to_have_text(  # the workflow's rule held too
        "⤼ held, not taken: rule 0 InterviewAgent → Planner "
        "(the chat handed off to Closer without a rule)")
    assert session.warnings == []  # nothing the chat did went unreported


PLAN_SAVED = derived("plan_saved")  # no trigger: only the tool sets it
PASSED_RULES = [
    TO_PLANNER,  # 0
    {"source_agent": "InterviewAgent", "target_agent": "Closer",
     "condition": "${interview_complete}"},  # 1: holds with rule 0, which AG2 tries first
    {"source_agent": "Planner", "target_agent": "Closer", "condition": "${plan_saved}"},  # 2
]


def save_and_ask(context_variables: ContextVariables) -> ReplyResult:
    """Save the plan (``plan_saved``), then ask the user before going on."""
    context_variables["plan_saved"] = True
    return ReplyResult(message="Saved; anything to add?", context_variables=context_variables,
                       target=RevertToUserTarget())


def test_rules_that_held_but_the_chat_did_not_take_are_shown_where_it_went_elsewhere(
    page, live
):
    """Rule 1 holds with rule 0, which AG2 takes first; rule 2 holds once the tool saved the
    plan, but the tool sends the chat back to the user. Each event where the chat went
    elsewhere says which rule held and was not taken, on a page that watched and on a page
    opened after the run alike."""
    definitions = imported(live, "PassedOver",
                           config(INTERVIEW_DONE, PLAN_SAVED, handoffs=PASSED_RULES))
    pattern = two_stage_pattern(interview=["NEXT"], answers=["Nothing more."],
                                planner=[ToolCall("save_and_ask"), "Planned."],
                                tools=[save_and_ask])
    reporter = RunReporter(live.url, live.secret)
    session = attach(pattern, definitions, workflow_name="PassedOver", enterprise_id="acme",
                     environ={}, reporter=reporter)
    assert reporter.wait_started(10)
    open_run(page, session.run_id)  # watches the run
    with session:
        result, _, _ = initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=20)
    ran = [message["name"] for message in result.chat_history]
    events = {e["seq"]: e for e in session.events}
    first = next(e for e in session.events if e["type"] == "handoff")
    assert (first["agent"], first["target"], first["rule"]) == ("InterviewAgent", "Planner", 0)
    flip = next(e for e in session.events if e["type"] == "context_set")
    back = next(s for s in range(flip["seq"], len(events) + 1)
                if events[s]["type"] in ("agent_text", "handoff"))
    assert events[back] == {**events[back], "type": "agent_text", "agent": "user"}
    assert ran[-1] == "Closer"  # rule 2 routed the chat once the Planner had the floor again

    later = page.context.new_page()
    open_run(later, session.run_id)
    for shown in (page, later):
        expect(shown.locator("#conn")).to_have_attribute("data-state", "ended")
        passed = shown.locator("#stream .ev-passed")
        expect(passed).to_have_count(2)
        row = shown.locator(f"#event-{first['seq']}")
        expect(row).to_contain_text("hands off to Planner (rule 0)")
        expect(row.locator(".ev-passed")).to_have_text(
            "⤼ held, not taken: rule 1 InterviewAgent → Closer (rule 0 fired first)")
        expect(shown.locator(f"#event-{back} .ev-passed")).to_have_text(
            "⤼ held, not taken: rule 2 Planner → Closer (the chat went to user)")
        taken = shown.locator('#graph g.edge[data-rule="2"]')
        expect(taken).to_have_attribute("data-taken", "true")  # taken later, once it routed
