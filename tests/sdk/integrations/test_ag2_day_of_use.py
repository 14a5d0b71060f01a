"""A day of use of the AG2 1.x adapter: what a runtime team wrote following AG2's own docs, and
what the run page showed. Real AG2 1.x (in-process hub, scripted LLM-free agents), reporting to
the shared live server where the promise is the inspector's.

- A hub listener of the team's own that awaits I/O (an audit trail) ran before the adapter's:
  the hand-offs were read from a state later turns had already advanced, so the run page showed
  another rule than the one the graph routed on, and a hand-off after its target's turn.
- A ``ToolCalled`` transition's packet was taken for a tool-routed one: when one of the
  workflow's rules came first (and routed), the hand-off was reported without its rule.
- A turn still running when the ``with`` block ended was reported after the run's status.
- Misuse met no clear error: an option of the wrong type passed ``attach`` and failed mid-run,
  ``agents=`` of names raised an AttributeError, ``end("done")`` left the run open.
- Overlapping runs on one hub left their wrappers on it; variables given to a single agent's
  turn were dropped without a word.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from ag2 import Context
from ag2.network import (
    AgentTarget,
    BaseHubListener,
    ChannelInject,
    ContextEquals,
    FromSpeaker,
    RevertToInitiatorTarget,
    TerminateTarget,
    ToolCalled,
    Transition,
    TransitionGraph,
)
from ag2.network.workflow_helpers import set_context
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.integrations.ag2 import attach
from contextadmin_sdk.integrations.ag2.scripted import (
    ScriptedHuman,
    ToolCall,
    in_process_hub,
    register_human,
    run_workflow,
    scripted_agent,
)

from .chats import config, derived
from .live import api
from .workflows import speakers, two_stage

SUPPORT = config(
    derived("triaged", {"type": "tool_response", "tool": "classify", "status": "success"}),
    derived("lookup_failed", {"type": "tool_response", "tool": "lookup", "status": "error"}),
    derived("escalated"),
    handoffs=[
        {"source_agent": "Triage", "target_agent": "Billing", "condition": "${triaged}"},
        {"source_agent": "Billing", "target_agent": "Supervisor", "condition": "${escalated}"},
        {"source_agent": "Billing", "target_agent": "Supervisor", "condition": "${lookup_failed}"},
    ],
)


def classify(category: str) -> str:
    """Classify the customer's request."""
    return json.dumps({"category": category})


def lookup(invoice: str) -> str:
    """Look the invoice up (it is missing)."""
    raise LookupError(f"invoice {invoice} not found")


async def escalate(reason: str, channel: ChannelInject) -> str:
    """Escalate the ticket: the workflow's context says so."""
    await set_context(channel, "escalated", True)
    return "Escalated."


class AuditTrail(BaseHubListener):
    """The team's own listener: writes each envelope to its audit store (async I/O)."""

    def __init__(self) -> None:
        self.seen = 0

    async def on_envelope_posted(self, envelope: Any, metadata: Any) -> None:
        await asyncio.sleep(0.05)
        self.seen += 1


async def support_desk() -> tuple[Any, Any, list[Any], TransitionGraph]:
    """Triage classifies, Billing's lookup fails, the Supervisor escalates, the graph ends."""
    hub = await in_process_hub()
    customer = await register_human(hub, "customer")
    agents = [
        scripted_agent("Triage", [ToolCall("classify", category="billing"), "To billing."],
                       tools=[classify]),
        scripted_agent("Billing", [ToolCall("lookup", invoice="42"), "Not found."],
                       tools=[lookup]),
        scripted_agent("Supervisor", [ToolCall("escalate", reason="missing"), "Escalated."],
                       tools=[escalate]),
    ]
    for agent in agents:
        await hub.register(agent, attach_plugin=False)
    ids = hub.name_to_id_map()
    graph = TransitionGraph(
        initial_speaker=customer.agent_id,
        transitions=[
            Transition(ContextEquals("escalated", True), TerminateTarget("escalated")),
            Transition(FromSpeaker(customer.agent_id), AgentTarget(ids["Triage"])),
            Transition(FromSpeaker(ids["Triage"]), RevertToInitiatorTarget()),
            Transition(FromSpeaker(ids["Billing"]), RevertToInitiatorTarget()),
        ],
        max_turns=20,
    )
    ScriptedHuman(hub, customer, [])
    return hub, customer, agents, graph


def published(server: Any, tmp_path: Path, name: str, definitions: dict[str, Any]) -> None:
    """Publish ``definitions`` as workflow ``name`` on the live server."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(definitions))
    server.manage("import_context", str(path), "--workflow", name)


async def test_a_slow_hub_listener_of_the_teams_own_does_not_change_the_reported_handoffs(
    site, tmp_path: Path
) -> None:
    """The path on the run page is the one the graph routed, each hand-off before its target
    speaks, however long the listeners registered before the adapter's take."""
    server, token = site
    published(server, tmp_path, "DayOfUseSupport", SUPPORT)
    hub, customer, agents, graph = await support_desk()
    audit = AuditTrail()
    hub.register_listener(audit)  # registered first, as a team sets its hub up
    session = attach(
        graph, SUPPORT, hub=hub, agents=agents, workflow_name="DayOfUseSupport",
        enterprise_id="acme", environ={}, reporter=RunReporter(server.url, token),
    )
    async with session:
        reason = await run_workflow(hub, customer, agents, session, opening="Invoice 42?")
    await hub.close()
    assert reason == "escalated" and audit.seen > 0
    # (AG2 1.2 itself lets agents speak between the graph's end and the channel's close while
    # a listener awaits, and routes them: only the run up to the graph's end is asserted here)
    assert speakers(session)[:4] == ["customer", "Triage", "Billing", "Supervisor"]
    order = [(e["type"], e.get("agent"), e.get("target"), e.get("rule")) for e in session.events]
    assert [o for o in order if o[0] in ("handoff", "tool_response")][:5] == [
        ("tool_response", "Triage", None, None),
        ("handoff", "Triage", "Billing", 0),  # before Billing's turn
        ("tool_response", "Billing", None, None),
        ("handoff", "Billing", "Supervisor", 2),  # lookup_failed routed, not the later escalated
        ("tool_response", "Supervisor", None, None),
    ]
    state = api(server.url, token, f"/api/runs/{session.run_id}/state/")
    path = [(p["source"], p["target"], p["rule"]) for p in state["state"]["execution"]["path"]]
    assert path[:2] == [("Triage", "Billing", 0), ("Billing", "Supervisor", 2)]
    assert state["state"]["context"] == session.state.context
    stored = api(server.url, token, f"/api/runs/{session.run_id}/events/")["events"]
    assert [(e["seq"], e["type"]) for e in stored] == [
        (e["seq"], e["type"]) for e in session.events
    ]


def ask_review(reason: str) -> str:
    """Ask for a review: a routing tool the graph matches with ``ToolCalled``."""
    return "Review requested."


async def test_a_rule_that_routes_a_tool_called_packet_is_reported_with_its_index() -> None:
    """The Planner calls a ``ToolCalled`` routing tool (to the Closer), but its first turn
    flipped ``drafted``: the workflow's rule, tried first, routes to the InterviewAgent."""
    workflow = await two_stage(
        interview=["Reviewing."],
        answers=[],
        planner=[ToolCall("ask_review", reason="drafted"), "Drafted."],
        tools=[ask_review],
    )
    ids = workflow.hub.name_to_id_map()
    workflow.graph.transitions[:0] = [
        Transition(FromSpeaker(workflow.user.agent_id), AgentTarget(ids["Planner"])),
        Transition(ToolCalled("ask_review"), AgentTarget(ids["Closer"])),
        Transition(FromSpeaker(ids["InterviewAgent"]), TerminateTarget("reviewed")),
    ]
    session = workflow.attach(
        config(
            derived("drafted", {"type": "agent_turn_count", "agent": "Planner", "count": 1}),
            handoffs=[
                {"source_agent": "Planner", "target_agent": "InterviewAgent",
                 "condition": "${drafted}"},
            ],
        ),
    )
    async with session:
        reason = await workflow.run(session)
    await workflow.hub.close()
    assert reason == "reviewed"
    assert speakers(session) == ["user", "Planner", "InterviewAgent"]  # the rule routed
    handoffs = [e for e in session.events if e["type"] == "handoff"]
    assert handoffs[0] == {
        "type": "handoff", "agent": "Planner", "target": "InterviewAgent", "rule": 0,
        "seq": handoffs[0]["seq"],
    }
    assert session.state.get("execution.path")[0]["rule"] == 0


async def test_a_turn_still_running_when_the_run_ends_is_not_reported_after_it() -> None:
    """Leaving ``async with`` while an agent thinks: its turn is not the run's (it would land
    after the run's status, and a completed run refuses it with a confusing warning)."""
    hub = await in_process_hub()
    user = await register_human(hub, "user")
    slow = scripted_agent("InterviewAgent", ["Thinking done."], delay=0.3)
    await hub.register(slow, attach_plugin=False)
    ids = hub.name_to_id_map()
    graph = TransitionGraph(
        initial_speaker=user.agent_id,
        transitions=[Transition(FromSpeaker(user.agent_id), AgentTarget(ids["InterviewAgent"]))],
    )
    session = attach(
        graph, config(), hub=hub, agents=[slow], workflow_name="W", enterprise_id="e",
        environ={},
    )
    async with session:
        channel = await user.open(type="workflow", target=["InterviewAgent"],
                                  knobs=session.knobs())
        await user.send(channel.channel_id, "Hello?")
        await asyncio.sleep(0.05)  # the agent's turn has started; the team's code moves on
    await asyncio.sleep(0.5)  # the turn ends after the run did
    await hub.close()
    assert [e["type"] for e in session.events] == ["agent_text", "run_status"]
    assert session.events[-1]["status"] == "completed"
    assert session.warnings == []


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("capacity", "10", "capacity: must be an int of at least 1, not str '10'"),
        ("flush_timeout", "5", "flush_timeout: must be a number of seconds"),
        ("environ", ["ENVIRONMENT=production"], "environ: must be a mapping"),
        ("reporter", "http://127.0.0.1:8000", "reporter: must be a contextadmin_sdk.client"),
        ("spool_dir", 5, "spool_dir: must be a directory path"),
        ("run_id", 123, "run_id: must be the run's id"),
    ],
)
async def test_an_option_of_the_wrong_type_is_refused_before_the_run_starts(
    option: str, value: Any, says: str
) -> None:
    """A ``capacity="10"`` (read from an env var, say) passed attach and then lost the run's
    events mid-run; a ``reporter="http://..."`` raised an AttributeError from inside."""
    agent = scripted_agent("Planner", ["Done."])
    reporter = RunReporter("http://127.0.0.1:9", "ca_unused")  # never reached: refused first
    options: dict[str, Any] = {"workflow_name": "W", "enterprise_id": "e", "environ": {}}
    if option in ("capacity", "spool_dir", "run_id"):
        options["reporter"] = reporter
    with pytest.raises(TypeError, match=re.escape(f"attach() {says}")):
        attach(agent, config(), **{**options, option: value})
    assert reporter.run_id is None  # no run started


async def test_agents_and_hub_are_checked_for_what_they_must_be() -> None:
    """``agents=`` a single agent or the agents' names, or ``hub=`` with a single agent: a
    TypeError saying what to pass, not an AttributeError from inside."""
    workflow = await two_stage(interview=["NEXT"], answers=[])
    names = [agent.name for agent in workflow.agents]
    options: dict[str, Any] = {"workflow_name": "W", "enterprise_id": "e", "environ": {}}
    with pytest.raises(TypeError, match=r"agents=: must be a list of the workflow's ag2.Agent"):
        attach(workflow.graph, config(), hub=workflow.hub, agents=workflow.agents[0], **options)
    with pytest.raises(TypeError, match=r"agents=: must be the ag2.Agent objects .* 'Interv"):
        attach(workflow.graph, config(), hub=workflow.hub, agents=names, **options)
    with pytest.raises(TypeError, match=r"hub= and agents= are for a workflow channel"):
        attach(workflow.agents[0], config(), hub=workflow.hub, **options)
    await workflow.hub.close()


async def test_ending_a_run_with_an_unknown_status_is_refused_and_the_run_stays_open() -> None:
    """``session.end("done")`` logged a warning and closed the reporter: the run stayed
    ``running`` on the server for good."""
    agent = scripted_agent("Planner", ["Done."])
    session = attach(agent, config(), workflow_name="W", enterprise_id="e", environ={})
    with session:
        await agent.ask("Go.")
    with pytest.raises(ValueError, match=r"status must be one of running, .* not 'done'"):
        session.end("done")
    assert session.events[-1]["status"] == "completed"
    fresh = attach(scripted_agent("Other", []), config(), workflow_name="W", enterprise_id="e",
                   environ={})
    with pytest.raises(ValueError, match=r"not 'done'"):
        fresh.end("done")
    assert fresh.end("failed") and fresh.state.get("execution.status") == "failed"


async def test_overlapping_runs_on_a_long_lived_hub_leave_it_as_it_was() -> None:
    """Runs that end in the order they began (the usual case on a busy hub) each left a
    pass-through wrapper on the hub's arbiter: a runtime serving many runs grew the chain
    every envelope walks without end."""
    hub = await in_process_hub()
    arbiter = hub.arbiter
    agents = [scripted_agent("InterviewAgent", [], after="NEXT"),
              scripted_agent("Planner", [], after="Planned.")]
    for agent in agents:
        await hub.register(agent, attach_plugin=False)
    ids = hub.name_to_id_map()
    ended: list[tuple[str, str]] = []  # (who, channel id), in the order the runs ended

    async def run(name: str, *, delay: float) -> None:
        human = await register_human(hub, name)
        ScriptedHuman(hub, human, [], delay=delay)
        graph = TransitionGraph(
            initial_speaker=human.agent_id,
            transitions=[
                Transition(FromSpeaker(human.agent_id), AgentTarget(ids["InterviewAgent"])),
                Transition(FromSpeaker(ids["InterviewAgent"]), RevertToInitiatorTarget()),
            ],
            max_turns=4,
        )
        session = attach(graph, config(), hub=hub, agents=agents, workflow_name="W",
                         enterprise_id=name, environ={})
        async with session:
            await run_workflow(hub, human, agents, session, opening="Hi.")
        ended.append((name, str(session.channel_id)))

    first = asyncio.create_task(run("alice", delay=0.0))
    await asyncio.sleep(0.01)  # alice's run began first, and ends first
    await asyncio.gather(first, run("bob", delay=0.1))
    await hub.close()
    assert [who for who, _ in ended] == ["alice", "bob"]
    assert hub.arbiter is arbiter
    assert {type(hub.adapter_for(c)).__name__ for _, c in ended} == {"WorkflowAdapter"}


seen_variables: list[dict[str, Any]] = []


def peek(context: Context) -> str:
    """What the turn's tools read from the agent's variables."""
    seen_variables.append(dict(context.variables))
    return "peeked"


async def test_variables_given_to_a_single_agents_turn_are_reported_not_dropped() -> None:
    """``Agent(variables=...)`` and ``ask(..., variables=...)`` naming declared variables were
    overwritten by the run's values without a word: the flag the caller set never flipped,
    and the constant it changed was not warned about."""
    seen_variables.clear()
    agent = scripted_agent("Planner", [ToolCall("peek"), "Done."], tools=[peek],
                           variables={"product_tier": "gold"})
    session = attach(agent, config(derived("planned")), workflow_name="W", enterprise_id="e",
                     environ={})
    with session:
        await agent.ask("Plan.", variables={"planned": True})
    assert seen_variables[0]["planned"] is True  # the caller's flag, now the run's
    assert seen_variables[0]["product_tier"] == "beta"  # the constant the run keeps
    assert [(f.name, f.value) for f in session.flips] == [("planned", True)]
    assert [(e["type"], e["name"]) for e in session.events if "name" in e] == [
        ("warning", "product_tier"),
        ("context_set", "planned"),
    ]
    assert session.context["planned"] is True and session.context["product_tier"] == "beta"


async def test_a_second_channel_opened_with_one_sessions_knobs_is_refused() -> None:
    """A loop over tickets reusing one session: the second channel's ``finished()`` returned
    at once and its turns went unobserved, without a word."""
    workflow = await two_stage(interview=["NEXT"], answers=[])
    session = workflow.attach(config())
    async with session:
        await workflow.run(session, opening="Ticket 1.")
        with pytest.raises(ValueError, match=r"a session observes one workflow channel"):
            session.knobs()
    await workflow.hub.close()


async def test_the_message_an_agent_opens_the_workflow_with_is_a_turn_of_the_run() -> None:
    """No human: a coordinator agent opens the channel through its own client and sends the
    task. Its text folds as a turn (the graph routes on it), but was never reported."""
    hub = await in_process_hub()
    coordinator = scripted_agent("Coordinator", [])
    researcher = scripted_agent("Researcher", ["FOUND"])
    writer = scripted_agent("Writer", ["Article."])
    clients = {a.name: await hub.register(a, attach_plugin=False)
               for a in (coordinator, researcher, writer)}
    ids = hub.name_to_id_map()
    graph = TransitionGraph(
        initial_speaker=ids["Coordinator"],
        transitions=[
            Transition(FromSpeaker(ids["Coordinator"]), AgentTarget(ids["Researcher"])),
            Transition(FromSpeaker(ids["Writer"]), TerminateTarget("written")),
        ],
    )
    found = derived(
        "researched", {"type": "agent_text", "agent": "Researcher", "match": {"equals": "FOUND"}}
    )
    session = attach(
        graph,
        config(found, handoffs=[{"source_agent": "Researcher", "target_agent": "Writer",
                                 "condition": "${researched}"}]),
        hub=hub, agents=[coordinator, researcher, writer], workflow_name="W", enterprise_id="e",
        environ={},
    )
    async with session:
        channel = await clients["Coordinator"].open(
            type="workflow", target=["Researcher", "Writer"], knobs=session.knobs()
        )
        await channel.send("Research AG2 1.x.")
        assert await session.finished(timeout=10) == "written"
    await hub.close()
    assert [(e["type"], e.get("agent"), e.get("target")) for e in session.events[:2]] == [
        ("agent_text", "Coordinator", None),
        ("handoff", "Coordinator", "Researcher"),
    ]
    assert speakers(session) == ["Coordinator", "Researcher", "Writer"]
    assert session.state.get("execution.turn_counts") == {
        "Coordinator": 1, "Researcher": 1, "Writer": 1,
    }
