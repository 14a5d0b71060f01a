"""B9 on AG2 1.x: what contextadmin_sdk.integrations.ag2 costs a real workflow channel, on its own
loop.

The same scripted workflow as Classic's B9 chat (two LLM-free agents taking turns, the same
config: derived triggers of both kinds and two hand-off rules) runs as an AG2 1.x workflow
channel on an in-process hub: a human opens it, then Asker and Answerer alternate through the
graph until ``max_turns``. Run without the adapter, and with it reporting to a server up, down
and slow (the scenarios of bench/ag2.py, interleaved with Classic's in the same run). The
adapter's cost is the time spent in the session's observation hooks per envelope or turn that
became a run event (the agent middleware's ``turn_ended`` / ``tool_ended``, the hub listener's
``envelope_posted``, the adapter tap's ``folded`` (the hand-off the graph chose): mapping, the
RunState fold, posting a flip into ``context_vars``, the spool line and the enqueue); the
sending happens on the reporter's thread.

The ``floor`` scenario is this machine's baseline for that figure: the same hooks, in the same
places of the same workflow, do only what reporting one event can never skip (encode it and
put its spool line in the OS, as the reporter does: ``SpoolFile``). Code that runs once per AG2
turn starts with cold caches, so the floor says what a hook costs here before it folds anything.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

WORKFLOW = "B9Chat"


async def _workflow(turns: int) -> tuple[Any, Any, list[Any], Any]:
    from ag2.network import AgentTarget, FromSpeaker, Transition, TransitionGraph
    from contextadmin_sdk.integrations.ag2.scripted import (
        in_process_hub,
        register_agents,
        register_human,
        scripted_agent,
    )

    hub = await in_process_hub()
    user = await register_human(hub, "user", inbox=10 * turns + 1000)
    asker = scripted_agent("Asker", [f"Question {i}?" for i in range(turns)])
    answerer = scripted_agent("Answerer", [f"Answer {i}." for i in range(turns)])
    agents = [asker, answerer]
    ids = await register_agents(hub, agents)
    graph = TransitionGraph(
        initial_speaker=user.agent_id,
        transitions=[
            Transition(FromSpeaker(user.agent_id), AgentTarget(ids["Asker"])),
            Transition(FromSpeaker(ids["Asker"]), AgentTarget(ids["Answerer"])),
            Transition(FromSpeaker(ids["Answerer"]), AgentTarget(ids["Asker"])),
        ],
        max_turns=turns + 1,
    )
    return hub, user, agents, graph


def _closed_listener() -> Any:
    """A hub listener whose ``done`` is set when a channel closes (the run without adapter)."""
    from ag2.network import BaseHubListener

    class Closed(BaseHubListener):
        def __init__(self) -> None:
            self.done = asyncio.Event()

        async def on_channel_event(self, channel_id: str, kind: str, payload: Any) -> None:
            if kind in ("closed", "expired"):
                self.done.set()

    return Closed()


def _floor(session: Any, name: str, spent_ns: list[int], scratch: Any) -> None:
    """Replace one observation hook of ``session`` with the floor: one event's spool line."""
    from contextadmin_sdk.client.transport import encode_record

    clock = time.perf_counter_ns
    seqs = iter(range(1, 1 << 30))

    def floor_sync(*args: Any) -> None:
        began = clock()
        event = {"type": "agent_text", "agent": "Asker", "text": "Question?", "seq": next(seqs)}
        scratch.write(b'{"event":' + encode_record(event) + b"}\n")
        spent_ns.append(clock() - began)

    async def floor(*args: Any) -> None:
        floor_sync(*args)

    hook = getattr(session, name)
    setattr(session, name, floor if asyncio.iscoroutinefunction(hook) else floor_sync)


def _timed(session: Any, name: str, scenario: Any) -> None:
    """Wrap one observation hook of ``session`` with wall-clock and CPU timers."""
    hook = getattr(session, name)
    reported, ignored, cpu = scenario.event_ns, scenario.other_ns, scenario.cpu_ns
    by_hook = scenario.hook_ns.setdefault(name, [])
    events = session.events
    clock, thread_clock = time.perf_counter_ns, time.thread_time_ns

    def record(before: int, spent: int, spent_cpu: int) -> None:
        if len(events) > before:
            reported.append(spent)
            by_hook.append(spent)
            cpu.append(spent_cpu)
        else:
            ignored.append(spent)

    async def timed(*args: Any) -> None:
        before = len(events)
        began_cpu = thread_clock()  # the CPU clock is a system call: outside the wall window
        began = clock()
        await hook(*args)
        spent = clock() - began
        record(before, spent, thread_clock() - began_cpu)

    def timed_sync(*args: Any) -> None:  # ``folded`` runs inside the hub's fold
        before = len(events)
        began_cpu = thread_clock()
        began = clock()
        hook(*args)
        spent = clock() - began
        record(before, spent, thread_clock() - began_cpu)

    setattr(session, name, timed if asyncio.iscoroutinefunction(hook) else timed_sync)


async def _run(
    scenario: Any, turns: int, config: Any, url: str | None, token: str, spool: Path
) -> None:
    from ag2.network import WORKFLOW_TYPE
    from contextadmin_sdk.client import RunReporter
    from contextadmin_sdk.client.spool_file import SpoolFile
    from contextadmin_sdk.integrations.ag2 import attach
    from contextadmin_sdk.integrations.ag2.scripted import run_workflow

    hub, user, agents, graph = await _workflow(turns)
    scratch = None  # the floor's spool lines
    try:
        if scenario.name == "without":
            closed = _closed_listener()
            hub.register_listener(closed)
            began = time.perf_counter()
            channel = await user.open(
                type=WORKFLOW_TYPE,
                target=[agent.name for agent in agents],
                knobs={"graph": graph.to_dict(), "context_vars": {}},
            )
            await user.send(channel.channel_id, "Start.")
            await asyncio.wait_for(closed.done.wait(), 600)
            scenario.chat_s.append(time.perf_counter() - began)
            return
        floor = scenario.name == "floor"
        session = attach(
            graph,
            config,
            hub=hub,
            agents=agents,
            workflow_name=WORKFLOW,
            enterprise_id="bench",
            environ={},
            reporter=None if floor else RunReporter(url, token, timeout=30.0),
            spool_dir=spool,
            flush_timeout=0.0 if scenario.name == "down" else 60.0,  # after the timing
        )
        if floor:
            scratch = SpoolFile(spool / "floor.jsonl", append=False)
            for hook in ("turn_ended", "folded"):  # the two that report, every call
                _floor(session, hook, scenario.event_ns, scratch)
        else:
            for hook in ("turn_ended", "tool_ended", "envelope_posted", "folded"):
                _timed(session, hook, scenario)
        session.__enter__()
        began = time.perf_counter()
        await run_workflow(hub, user, agents, session, opening="Start.", timeout=600)
        scenario.chat_s.append(time.perf_counter() - began)
        await asyncio.to_thread(session.__exit__, None, None, None)
        if floor:
            return
        scenario.run_events += session.state.last_seq
        assert session.reporter is not None
        scenario.delivered += session.reporter.last_acked_seq
    finally:
        if scratch is not None:
            scratch.close()
        await hub.close()


def run_once(
    scenario: Any, turns: int, config: Any, url: str | None, token: str, spool: Path
) -> None:
    """One 1.x workflow run of ``scenario`` (its own event loop, as a runtime's would be)."""
    asyncio.run(_run(scenario, turns, config, url, token, spool))
