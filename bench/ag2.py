"""B9: what contextadmin_sdk.integrations.autogen costs a real AG2 Classic chat, on the chat's own
thread,
and (bench/ag2x.py, interleaved in the same run) what contextadmin_sdk.integrations.ag2 costs the
same
workflow on AG2 1.x, on the workflow's own loop.

The same scripted 1,000-turn group chat (two LLM-free agents taking turns, real AG2 0.14
speaker selection, hand-off rules and derived triggers) runs side by side, interleaved per
repetition: without the adapter, and with it reporting to the server up (a real Daphne), down
(a closed port) and slow (every request answered after ``SLOW_S``), each with a JSONL spool.
The adapter's cost is the time spent in ``session.observe`` for each AG2 event that became a
run event (mapping, the RunState fold with its derived triggers, mirroring flips into the
pattern's ContextVariables, the spool line and the enqueue); the sending happens on the
reporter's thread.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.stats import percentile

SLOW_S = 0.2  # the slow server's answer time per request
WORKFLOW = "B9Chat"
SCENARIOS = ("without", "up", "down", "slow")
FLOOR = "floor"  # AG2 1.x only (bench/ag2x.py): this machine's baseline for the hooks' cost


def chat_config(turns: int) -> dict[str, Any]:
    """Derived flags of all three trigger types on the chat's agents, and two hand-off rules."""
    half = max(1, turns // 4)
    return {
        "context_variables": {
            "declarative_variables": [{"name": "product_tier", "type": "string", "value": "beta"}],
            "derived_variables": [
                {
                    "name": "asked_a_lot",
                    "type": "boolean",
                    "triggers": [{"type": "agent_turn_count", "agent": "Asker", "count": half}],
                },
                {
                    "name": "answer_final",
                    "type": "boolean",
                    "triggers": [
                        {"type": "agent_text", "agent": "Answerer", "match": {"equals": "FINAL"}}
                    ],
                },
            ],
        },
        "handoffs": [
            {"source_agent": "Asker", "target_agent": "Answerer", "condition": "${asked_a_lot}"},
            {"source_agent": "Answerer", "target_agent": "Asker", "condition": "${answer_final}"},
        ],
    }


def chat_pattern(turns: int) -> Any:
    """Two scripted agents taking turns for ``turns`` turns (no LLM, no network)."""
    from autogen.agentchat.group import AgentTarget, TerminateTarget
    from autogen.agentchat.group.patterns import DefaultPattern
    from contextadmin_sdk.integrations.autogen.scripted import scripted_agent

    asker = scripted_agent("Asker", [f"Question {i}?" for i in range(turns)])
    answerer = scripted_agent("Answerer", [f"Answer {i}." for i in range(turns)])
    asker.handoffs.set_after_work(AgentTarget(answerer))
    answerer.handoffs.set_after_work(AgentTarget(asker))
    return DefaultPattern(
        initial_agent=asker,
        agents=[asker, answerer],
        group_after_work=TerminateTarget(),
    )


class _Silent:
    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        pass

    def send(self, message: Any) -> None:
        pass

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        return "exit"


@dataclass
class Scenario:
    name: str
    chat_s: list[float] = field(default_factory=list)  # initiate_group_chat wall time
    event_ns: list[int] = field(default_factory=list)  # observe() of events that were reported
    other_ns: list[int] = field(default_factory=list)  # observe() of the events it ignores
    cpu_ns: list[int] = field(default_factory=list)  # the chat thread's CPU time in observe()
    hook_ns: dict[str, list[int]] = field(default_factory=dict)  # event_ns by hook (AG2 1.x)
    run_events: int = 0
    delivered: int = 0

    def us(self, q: float) -> float:
        return percentile(self.event_ns, q) / 1e3

    def hook_us(self, hook: str, q: float) -> float:
        return percentile(self.hook_ns.get(hook, []), q) / 1e3

    def cpu_us(self, q: float) -> float:
        return percentile(self.cpu_ns, q) / 1e3

    @property
    def chat_median(self) -> float:
        return percentile(self.chat_s, 50)


@dataclass
class B9:
    turns: int
    reps: int
    scenarios: dict[str, Scenario]  # AG2 Classic
    scenarios_x: dict[str, Scenario] = field(default_factory=dict)  # AG2 1.x


def _run_once(
    scenario: Scenario,
    turns: int,
    config: dict[str, Any],
    url: str | None,
    token: str,
    spool: Path,
) -> None:
    from autogen.agentchat import initiate_group_chat
    from autogen.io import IOStream
    from contextadmin_sdk.client import RunReporter
    from contextadmin_sdk.integrations.autogen import attach

    pattern = chat_pattern(turns)
    with IOStream.set_default(_Silent()):
        if url is None:
            began = time.perf_counter()
            initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=turns + 1)
            scenario.chat_s.append(time.perf_counter() - began)
            return
        session = attach(
            pattern,
            config,
            workflow_name=WORKFLOW,
            enterprise_id="bench",
            environ={},
            reporter=RunReporter(url, token, timeout=30.0),
            spool_dir=spool,
            flush_timeout=0.0 if scenario.name == "down" else 60.0,  # after the chat's timing
        )
        observe = session.observe
        reported, ignored, cpu = scenario.event_ns, scenario.other_ns, scenario.cpu_ns
        events = session.events
        clock, thread_clock = time.perf_counter_ns, time.thread_time_ns

        def timed(event: Any) -> None:
            before = len(events)
            began_cpu = thread_clock()  # the CPU clock is a system call: outside the wall window
            began = clock()
            observe(event)
            spent = clock() - began
            spent_cpu = thread_clock() - began_cpu
            if len(events) > before:
                reported.append(spent)
                cpu.append(spent_cpu)
            else:
                ignored.append(spent)

        session.observe = timed  # type: ignore[method-assign]
        began = time.perf_counter()
        with session:
            initiate_group_chat(pattern=pattern, messages="Start.", max_rounds=turns + 1)
            scenario.chat_s.append(time.perf_counter() - began)
        scenario.run_events += session.state.last_seq
        assert session.reporter is not None
        scenario.delivered += session.reporter.last_acked_seq


def b9_adapter(*, turns: int, reps: int, workdir: Path) -> B9:
    """Run the chat ``reps`` times per scenario, interleaved (Classic, then 1.x), against real
    and fake servers."""
    from bench import ag2x
    from bench.servers import prepare_site
    from devservers.processes import PROJECT, Daphne, free_port, wait_for_port

    config = chat_config(turns)
    (workdir / "b9").mkdir(parents=True, exist_ok=True)
    config_path = workdir / "b9-config.json"
    config_path.write_text(json.dumps(config))
    site = prepare_site(
        workdir / "b9", commands=[("import_context", str(config_path), "--workflow", WORKFLOW)]
    )
    daphne = Daphne(site.env(), workdir / "b9-daphne.log").start()
    slow_port = free_port()
    slow = subprocess.Popen(  # its own process: it must not share this one's GIL
        [sys.executable, "-m", "tests.sdk.integrations.fake_server", str(slow_port), str(SLOW_S)],
        cwd=PROJECT,
    )
    wait_for_port(slow_port, process=slow)
    slow_url = f"http://127.0.0.1:{slow_port}"
    urls = {
        "without": None,
        "up": daphne.url,
        "down": f"http://127.0.0.1:{free_port()}",
        "slow": slow_url,
    }
    scenarios = {name: Scenario(name) for name in SCENARIOS}
    scenarios_x = {name: Scenario(name) for name in (*SCENARIOS, FLOOR)}
    client_log = logging.getLogger("contextadmin_sdk.client")
    level = client_log.level
    client_log.setLevel(logging.CRITICAL)  # the down and slow cases log their outage by design
    try:
        with tempfile.TemporaryDirectory(dir=workdir) as spool:
            _run_once(scenarios["up"], 20, config, daphne.url, site.token, Path(spool))  # warm
            ag2x.run_once(scenarios_x["up"], 20, config, daphne.url, site.token, Path(spool))
            scenarios["up"], scenarios_x["up"] = Scenario("up"), Scenario("up")
            for _ in range(reps):
                for name in SCENARIOS:
                    _run_once(scenarios[name], turns, config, urls[name], site.token, Path(spool))
                    ag2x.run_once(
                        scenarios_x[name], turns, config, urls[name], site.token, Path(spool)
                    )
                ag2x.run_once(scenarios_x[FLOOR], turns, config, None, site.token, Path(spool))
    finally:
        client_log.setLevel(level)
        slow.terminate()
        slow.wait(10)
        daphne.stop()
    return B9(turns, reps, scenarios, scenarios_x)
