"""``python -m bench [--quick] [--only B1,B5] [--output docs/benchmarks.md]``.

Runs every figure of docs/benchmarks.md on this machine and prints one line per figure, each
starting with its id (``bench.FIGURES``). The full run writes docs/benchmarks.md; ``--quick``
(run by the test suite) and ``--only`` write nothing unless ``--output`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import importlib
import json
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench import BY_NAME_ONLY, FIGURES, report
from bench.machine import Machine, OtherWork, redis_version, wait_for_quiet
from bench.stats import Latency, Rates

if TYPE_CHECKING:
    from bench.ag2 import B9

PROJECT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Profile:
    """Sizes and repetitions: the full run, or the quick one the test suite runs."""

    name: str
    reps: int
    latency_events: int  # per repetition, at RATE events/s
    fanout_events: int
    warmup: int
    http_events: int  # per repetition
    ws_events: int
    export_reps: int
    context_reps: int
    trigger_events: int
    naive_trigger_events: int
    state_events: int
    state_samples: int
    full_replay_reps: int


FULL = Profile("full", 5, 1000, 500, 50, 20_000, 10_000, 30, 30, 100_000, 10_000, 100_000, 40, 3)
QUICK = Profile("quick", 1, 40, 30, 10, 2_000, 1_000, 3, 3, 20_000, 2_000, 10_000, 10, 2)

RATE = 100.0  # events/s for B1 and B3
FANOUT = 50
HTTP_BATCH = 100
HTTP_STREAMS = 1
WS_STREAMS = 1
WS_WINDOW = 100
IN_FLIGHT = 1  # the 401 floor: paced like B1, one request at a time
REDIS_LAYERS = {  # settings.REDIS_CHANNEL_LAYER: the layer it configures
    "pubsub": "channels_redis RedisPubSubChannelLayer",
    "lists": "channels_redis RedisChannelLayer",
}


# The AG2 extras (pyproject.toml): the module a figure needs -> what it is and how to install it
EXTRAS = {
    "autogen": ("AG2 Classic", 'pip install "./sdk[autogen]"'),
    "ag2": ("AG2 1.x", 'pip install "./sdk[ag2]"'),
}


def extra_missing(module: str) -> str | None:
    """Say which extra to install when ``module`` cannot be imported here (None: it can)."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        name, install = EXTRAS[module]
        return f"{name} is not installed here (import {module}: {exc}); install it: {install}"
    return None


@dataclass
class Figure:
    id: str
    what: str
    result: str
    target: str
    met: bool | None
    baseline: str = ""
    ratio: str = ""
    setup: str = ""
    value: float | None = None  # the headline number, for ratios between figures

    def line(self) -> str:
        parts = [f"{self.id}  {self.what}: {self.result}"]
        if self.baseline:
            parts.append(f"baseline {self.baseline}")
        if self.ratio:
            parts.append(f"ratio {self.ratio}")
        verdict = "n/a" if self.met is None else ("MET" if self.met else "MISSED")
        parts.append(f"target {self.target}: {verdict}")
        parts.append(self.setup)
        return " | ".join(parts)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b else "n/a"


class Bench:
    def __init__(
        self,
        profile: Profile,
        workdir: Path,
        only: set[str] | None,
        live_database: str | None,
        redis_layer: str = "pubsub",
    ) -> None:
        self.redis_layer = redis_layer  # settings.REDIS_CHANNEL_LAYER for B4
        self.max_wait = 0.0 if profile.name == "quick" else 180.0
        self._other = OtherWork()
        self.profile = profile
        self.workdir = workdir
        self.only = only
        self.live_database = live_database  # None: a SQLite file
        self.figures: list[Figure] = []
        self.machine: Machine | None = None
        self.layers: dict[str, str] = {}

    def wanted(self, *ids: str) -> bool:
        """Whether any of these figures was asked for (``--only B4`` asks for B4.B1..., but
        not for the figures of ``BY_NAME_ONLY``)."""
        return self.only is None or any(
            i in self.only or (i.split(".")[0] in self.only and i not in BY_NAME_ONLY) for i in ids
        )

    def emit(self, figure: Figure) -> None:
        self.figures.append(figure)
        print(figure.line(), flush=True)

    def quiet(self) -> None:
        """Before a figure: (full run) wait until other work leaves the CPUs idle; start
        counting the CPU time other work takes while the figure runs."""
        if self.max_wait:
            self._busy = wait_for_quiet(max_wait=self.max_wait)
        self._other.start()

    def tag(self, layer: str, servers: str) -> str:
        assert self.machine is not None
        return self.machine.tag(
            f"{layer}, {servers}", getattr(self, "_busy", None), self._other.share()
        )

    # -- pure engine and in-process Django ----------------------------------------------------
    def engine(self) -> None:
        from bench import engine

        p = self.profile
        if self.wanted("B7"):
            self.quiet()
            t = engine.b7_triggers(
                triggers=1000,
                events=p.trigger_events,
                naive_events=p.naive_trigger_events,
                reps=p.reps + 1,
            )
            speedup = t.rates.median / t.naive.median
            self.emit(
                Figure(
                    "B7",
                    f"derived trigger evaluation, {t.triggers} triggers, {t.events:,} events "
                    "in-process",
                    t.rates.text(),
                    "≥ 100,000 events/s and ≥ 10x naive",
                    t.rates.median >= 100_000 and speedup >= 10,
                    baseline=f"naive scan of all triggers {t.naive.text()}",
                    ratio=f"{speedup:.1f}x faster",
                    setup=self.tag("none", "in-process"),
                )
            )
        if self.wanted("B6"):
            self.quiet()
            c = engine.b6_build_context(variables=200, collections=5, reps=p.context_reps)
            self.emit(
                Figure(
                    "B6",
                    f"build_context, {c.variables} database variables over {c.collections} "
                    "collections (nx-27017)",
                    f"{c.round_trips} MongoDB round trips, {c.timings.ms()}, {c.resolved} resolved",
                    "≤ 5 round trips",
                    c.round_trips <= 5,
                    baseline=f"per-variable loop {c.naive_round_trips} round trips, {c.naive.ms()}",
                    ratio=f"{c.naive_round_trips / max(c.round_trips, 1):.0f}x fewer round trips, "
                    f"{ratio(c.naive.median, c.timings.median)} faster",
                    setup=self.tag("none", "in-process + nx-27017"),
                )
            )

    def in_database(self) -> None:
        from bench import indb

        p = self.profile
        if self.wanted("B5"):
            self.quiet()
            e = indb.b5_export(
                sizes=(10, 100, 1000), reps=p.export_reps, naive_reps=max(2, p.export_reps // 3)
            )
            constant = len(set(e.queries.values())) == 1
            counts = ", ".join(f"{n} vars: {q}" for n, q in e.queries.items())
            naive = ", ".join(f"{n} vars: {q}" for n, q in e.naive_queries.items())
            self.emit(
                Figure(
                    "B5",
                    f"workflow_export of {e.size:,} variables (development export "
                    f"{e.bytes:,} bytes; the repetitions alternate development and production)",
                    f"{e.timings.ms()}; SQL queries {counts}",
                    "constant queries, p99 ≤ 200 ms",
                    constant and e.timings.p99 <= 0.200,
                    baseline=f"N+1 export (triggers per variable) {e.naive.ms()}; queries {naive}",
                    ratio=f"{ratio(e.naive.median, e.timings.median)} faster",
                    setup=self.tag("none", "in-process"),
                )
            )
        if self.wanted("B8"):
            self.quiet()
            s = indb.b8_state_at(
                events=p.state_events,
                batch=1000,
                samples=p.state_samples,
                full_replay_reps=p.full_replay_reps,
            )
            self.emit(
                Figure(
                    "B8",
                    f"run_state_at(seq N) on a run of {s.events:,} events (random N, half of "
                    "them the worst case)",
                    f"{s.timings.ms()}; the run was ingested at "
                    f"{s.events / s.ingest_seconds:,.0f} events/s (batches of 1,000)",
                    "p99 ≤ 200 ms",
                    s.timings.p99 <= 0.200,
                    baseline=f"replay from seq 0 to {s.checked_seq:,} (same state) "
                    f"{s.full_replay.ms()}",
                    ratio=f"{ratio(s.full_replay.median, s.timings.median)} faster",
                    setup=self.tag("none", "in-process"),
                )
            )

    def ag2(self) -> None:
        """B9: the AG2 adapter's cost on a real chat's thread (bench/ag2.py)."""
        if not self.wanted("B9"):
            return
        missing = extra_missing("autogen") or extra_missing("ag2")  # B9 runs both, interleaved
        if missing:  # the other figures still run and are written; these say why not
            for figure, what in (
                ("B9", "integrations.autogen on the chat thread (AG2 Classic group chat)"),
                ("B9.ag2", "integrations.ag2 on the workflow's loop (AG2 1.x workflow)"),
            ):
                self.emit(
                    Figure(
                        figure,
                        what,
                        f"skipped: {missing}",
                        "≤ 50 µs p50 and ≤ 1 ms p99 per event",
                        None,
                        setup="not run",
                    )
                )
            return
        from bench import ag2

        turns, reps = (20, 1) if self.profile.name == "quick" else (1000, 5)
        self.quiet()
        r = ag2.b9_adapter(turns=turns, reps=reps, workdir=self.workdir)
        s = r.scenarios
        served = ("up", "down", "slow")
        cost = "; ".join(
            f"server {name} p50 {s[name].us(50):.1f} µs, p99 {s[name].us(99):.1f} µs "
            f"(its CPU time p50 {s[name].cpu_us(50):.1f}, p99 {s[name].cpu_us(99):.1f} µs)"
            for name in served
        )
        chats = ", ".join(f"{name} {s[name].chat_median * 1e3:.0f} ms" for name in served)
        events = s["up"].run_events // r.reps
        delivered = ", ".join(
            f"{name} {s[name].delivered:,}/{s[name].run_events:,}" for name in ("up", "slow")
        )
        per_event_ok = all(s[n].us(50) <= 50 and s[n].us(99) <= 1000 for n in served)
        down_ok = s["down"].chat_median <= s["up"].chat_median * 1.05
        without = s["without"].chat_median
        extra = (s["up"].chat_median - without) / max(events, 1)
        self.emit(
            Figure(
                "B9",
                f"contextadmin_sdk.integrations.autogen on the chat thread: a scripted "
                f"{turns:,}-turn AG2 "
                f"Classic group "
                f"chat ({events:,} run events each), {reps} reps interleaved, JSONL spool on; "
                f"server up (Daphne), down (closed port), slow ({ag2.SLOW_S * 1e3:.0f} ms "
                "per request)",
                f"per reported event {cost}; chat time {chats}; delivered {delivered}",
                "≤ 50 µs p50 and ≤ 1 ms p99 per event (wall clock) in each case; the chat with "
                "the server down no slower than up (median chat time within 5%)",
                per_event_ok and down_ok,
                baseline=f"the same chat without the adapter {without * 1e3:.0f} ms",
                ratio=f"+{extra * 1e6:.0f} µs of chat time per run event with the server up",
                setup=self.tag("in-memory", "1 Daphne + a slow stand-in process"),
            )
        )
        self._ag2x(r)

    def _ag2x(self, r: B9) -> None:
        """B9.ag2: the same workflow on AG2 1.x, from the same interleaved run (bench/ag2x.py)."""
        s = r.scenarios_x
        served = ("up", "down", "slow")
        cost = "; ".join(
            f"server {name} p50 {s[name].us(50):.1f} µs, p99 {s[name].us(99):.1f} µs "
            f"(its CPU time p50 {s[name].cpu_us(50):.1f}, p99 {s[name].cpu_us(99):.1f} µs)"
            for name in served
        )
        runs = ", ".join(f"{name} {s[name].chat_median * 1e3:.0f} ms" for name in served)
        events = s["up"].run_events // r.reps
        delivered = ", ".join(
            f"{name} {s[name].delivered:,}/{s[name].run_events:,}" for name in ("up", "slow")
        )
        per_event_ok = all(s[n].us(50) <= 50 and s[n].us(99) <= 1000 for n in served)
        down_ok = s["down"].chat_median <= s["up"].chat_median * 1.05
        without = s["without"].chat_median
        extra = (s["up"].chat_median - without) / max(events, 1)
        floor = s["floor"]
        by_hook = ", ".join(  # the median straddles the turn hook and the envelope hook
            f"{hook} p50 {s['up'].hook_us(hook, 50):.1f} µs ({len(spent):,} calls)"
            for hook, spent in s["up"].hook_ns.items()
            if spent
        )
        self.emit(
            Figure(
                "B9.ag2",
                f"contextadmin_sdk.integrations.ag2 on the workflow's own loop: the same "
                f"{r.turns:,}-turn "
                f"workflow on AG2 1.x (a workflow channel on an in-process hub, {events:,} run "
                f"events each), interleaved with B9's Classic runs, {r.reps} reps, JSONL spool "
                "on; server up, down, slow as in B9",
                f"per observed envelope or turn {cost}; workflow time {runs}; "
                f"delivered {delivered}; this machine's floor, one event's report "
                f"(encode + spool line) in the same hooks: p50 {floor.us(50):.1f} µs, "
                f"p99 {floor.us(99):.1f} µs; by hook (server up): {by_hook}",
                "≤ 50 µs p50 and ≤ 1 ms p99 per observed envelope (wall clock) in each case; "
                "the workflow with the server down within 5% of up (median time)",
                per_event_ok and down_ok,
                baseline=f"the same workflow without the adapter {without * 1e3:.0f} ms",
                ratio=f"+{extra * 1e6:.0f} µs of workflow time per run event with the server up; "
                f"hook p50 / floor p50 {s['up'].us(50) / max(floor.us(50), 1e-3):.1f}x (server "
                "up)",
                setup=self.tag("in-memory", "1 Daphne + a slow stand-in process"),
            )
        )

    def impact(self) -> None:
        """B12: impact analysis, recorded runs replayed per second (bench/impact.py)."""
        if not self.wanted("B12"):
            return
        from bench import impact

        runs, events = (20, 200) if self.profile.name == "quick" else (100, 1000)
        self.quiet()
        r = impact.b12_impact(runs=runs, events=events, reps=self.profile.reps)
        per_run = r.baseline.median / r.rates.median if r.rates.median else float("nan")
        self.emit(
            Figure(
                "B12",
                f"contextadmin.impact: {r.runs} recorded runs of {r.events:,} events each, read "
                "from runs.selectors.recorded_runs and replayed under their pinned version "
                "(1) and a draft (2) that changes the derived trigger, compared",
                f"{r.rates.text('runs/s')} ({r.events_per_s:,.0f} events/s); the draft "
                f"changes {r.changed} of {r.runs} runs; the pinned version against itself "
                f"changes none: {r.unchanged_under_pinned}",
                "≥ 10 runs/s of 1,000 events (History's 100 runs within its 10 s budget)",
                r.rates.median * r.events / 1000 >= 10 and r.unchanged_under_pinned,
                baseline="one replay of each run under its pinned version "
                f"{r.baseline.text('runs/s')}",
                ratio=f"impact costs {per_run:.1f}x one replay per run",
                setup=self.tag("none", "in-process"),
                value=r.rates.median,
            )
        )

    def scale(self) -> None:
        """B10 (one long run) and B11 (many runs at once): bench/scale.py."""
        from bench import scale

        scale.figures(self, Figure)

    def webhooks(self) -> None:
        """B13: webhooks beside ingest (bench/webhooks.py)."""
        from bench import webhooks

        webhooks.figures(self, Figure)

    def reporting(self) -> None:
        """B11.http, B11.ws, B11.prod, B11.post: runtimes reporting with RunReporter over
        HTTP or the ingest websocket (bench/reporting_figures.py)."""
        from bench import reporting_figures

        reporting_figures.figures(self, Figure)

    # -- live servers ---------------------------------------------------------------------------
    def live(self) -> None:
        redis_figures = ("B4.B1", "B4.B2.http", "B4.B2.ws", "B4.B3")
        if not self.wanted("B1", "B2.http", "B2.ws", "B3", *redis_figures):
            return
        from bench import live
        from bench.servers import daphnes, prepare_site, redis_server

        site = prepare_site(self.workdir, self.live_database)
        memory: dict[str, Figure] = {}
        self.quiet()
        with live.Relay(self.workdir / "relay.log") as relay:
            baseline_1 = self._relay(relay, 1, self.profile.latency_events)
            baseline_n = self._relay(relay, FANOUT, self.profile.fanout_events)
        if self.wanted("B1", "B2.http", "B2.ws", "B3"):
            with daphnes(site, 1) as servers:
                layer = ("in-memory", "1 Daphne")
                memory = self._live_figures(
                    site, servers, servers, "", layer, baseline_1, baseline_n
                )
        if self.wanted(*redis_figures):
            with (
                redis_server(self.workdir) as redis,
                daphnes(site, 2, redis_url=redis.url, redis_layer=self.redis_layer) as two,
            ):
                layer = (f"Redis ({REDIS_LAYERS[self.redis_layer]})", "2 Daphnes")
                self._live_figures(
                    site, two[:1], two[1:], "B4.", layer, baseline_1, baseline_n, memory, two
                )

    def _relay(self, relay: object, sockets: int, events: int) -> Latency:
        from bench import live

        reps = []
        for _ in range(self.profile.reps):
            d = asyncio.run(
                live.relay_latency(
                    relay,  # type: ignore[arg-type]
                    sockets=sockets,
                    events=events,
                    warmup=self.profile.warmup,
                    rate=RATE,
                )
            )
            if not d.exact:
                raise RuntimeError(f"relay baseline lost messages: {d}")
            reps.append(d.latencies)
        return Latency.of(reps)

    def _live_figures(
        self,
        site: object,
        post_to: list,
        watch_on: list,
        prefix: str,
        layer: tuple[str, str],
        baseline_1: Latency,
        baseline_n: Latency,
        memory: dict[str, Figure] | None = None,
        ingest_servers: list | None = None,
    ) -> dict[str, Figure]:
        from bench import live

        p = self.profile
        out: dict[str, Figure] = {}
        where = (
            "POST to Daphne A, inspector on Daphne B"
            if prefix
            else "POST and inspector on 1 Daphne"
        )

        def latency(sockets: int, events: int) -> tuple[Latency, list[live.Delivery]]:
            reps = [
                asyncio.run(
                    live.product_latency(
                        site,  # type: ignore[arg-type]
                        post_to[0],
                        watch_on,
                        sockets=sockets,
                        events=events,
                        warmup=p.warmup,
                        rate=RATE,
                    )
                )
                for _ in range(p.reps)
            ]
            return Latency.of([d.latencies for d in reps]), reps

        def exactness(reps: list[live.Delivery]) -> str:
            lost = sum(d.missing for d in reps)
            dup = sum(d.duplicates for d in reps)
            order = sum(d.out_of_order for d in reps)
            queued = Latency.of([d.queued for d in reps])
            sends = sum(d.sends for d in reps)
            events = sum(d.events + p.warmup for d in reps)
            most = max(d.most_per_send for d in reps)
            return (
                f"lost {lost}, duplicated {dup}, out of order {order}; {events} events in "
                f"{sends} sends (at most {most} per send); from the event's scheduled time "
                f"(with its wait in the runtime's queue) p50 {ms(queued.p50)}, "
                f"p99 {ms(queued.p99)}"
            )

        def versus(key: str) -> str:
            if memory and key in memory:
                return f"; in-memory/1 Daphne: {memory[key].result.split(' (')[0]}"
            return ""

        def versus_rate(key: str, value: float) -> str:
            base = memory[key].value if memory and key in memory else None
            return f"{value / base:.2f}x the in-memory/1 Daphne rate" if base else ""

        if self.wanted(f"{prefix}B1"):
            self.quiet()
            lat, reps = latency(1, p.latency_events)
            floor = Latency.of(
                [
                    asyncio.run(
                        live.unauthorized_floor(
                            post_to[0], requests=p.latency_events, rate=RATE, concurrency=IN_FLIGHT
                        )
                    )
                    for _ in range(p.reps)
                ]
            )
            over_ws = [
                asyncio.run(
                    live.product_latency_ws(
                        site,  # type: ignore[arg-type]
                        post_to[0],
                        watch_on[0],
                        events=p.latency_events,
                        warmup=p.warmup,
                        rate=RATE,
                    )
                )
                for _ in range(p.reps)
            ]
            ws_lat = Latency.of([d.latencies for d in over_ws])
            ws_exact = all(d.exact for d in over_ws)
            figure = Figure(
                f"{prefix}B1",
                f"event → flip on inspector websocket @{RATE:.0f} events/s ({where}), sent over "
                "/ws/ingest/ and as POSTs through Django's request handler",
                f"/ws/ingest/ p50 {ms(ws_lat.p50)}, p99 {ms(ws_lat.p99)}; {exactness(over_ws)}. "
                f"HTTP {lat.ms()}; {exactness(reps)}. Bound: the same POST answered 401 before "
                f"any query (Daphne + Django's handler, middleware and view) "
                f"p50 {ms(floor.p50)}, p99 {ms(floor.p99)}",
                *target_of(
                    prefix,
                    "ws p50 ≤ 5 ms, p99 ≤ 20 ms; HTTP p50 ≤ 2x the ws p50 and ≤ 8 ms, p99 ≤ 20 ms",
                    (
                        ws_lat.p50 <= 0.005,
                        ws_lat.p99 <= 0.020,
                        lat.p50 <= min(2 * ws_lat.p50, 0.008),
                        lat.p99 <= 0.020,
                    ),
                    all(d.exact for d in reps) and ws_exact,
                ),
                baseline=f"bare websockets relay p50 {ms(baseline_1.p50)}, "
                f"p99 {ms(baseline_1.p99)}{versus('B1')}",
                ratio=f"ws p50 {ratio(ws_lat.p50, baseline_1.p50)} the relay; HTTP p50 "
                f"{ratio(lat.p50, ws_lat.p50)} the ws p50",
                setup=self.tag(*layer),
                value=ws_lat.p50,
            )
            out["B1"] = figure
            self.emit(figure)
        servers = ingest_servers or post_to
        if self.wanted(f"{prefix}B2.http"):
            self.quiet()
            runs = [
                asyncio.run(
                    live.ingest_http(
                        site,  # type: ignore[arg-type]
                        servers,
                        streams=max(HTTP_STREAMS, len(servers)),
                        events=p.http_events,
                        batch=HTTP_BATCH,
                    )
                )
                for _ in range(p.reps)
            ]
            rates = Rates(tuple(r.rate for r in runs))
            streams = max(HTTP_STREAMS, len(servers))
            figure = Figure(
                f"{prefix}B2.http",
                f"sustained ingest over HTTP, batches of {HTTP_BATCH}, {streams} runtime(s) "
                f"back to back, {p.http_events:,} events/rep, committed",
                f"{rates.text()}; all stored: {all(r.verified for r in runs)}{versus('B2.http')}",
                "≥ 5,000 events/s",
                rates.median >= 5000 and all(r.verified for r in runs),
                ratio=versus_rate("B2.http", rates.median),
                setup=self.tag(*layer),
                value=rates.median,
            )
            out["B2.http"] = figure
            self.emit(figure)
        if self.wanted(f"{prefix}B2.ws"):
            self.quiet()
            streams = max(WS_STREAMS, len(servers))
            runs = [
                asyncio.run(
                    live.ingest_ws(
                        site,  # type: ignore[arg-type]
                        servers,
                        streams=streams,
                        events=p.ws_events,
                        window=WS_WINDOW,
                    )
                )
                for _ in range(p.reps)
            ]
            rates = Rates(tuple(r.rate for r in runs))
            figure = Figure(
                f"{prefix}B2.ws",
                f"sustained ingest over /ws/ingest/, one event per message, {streams} "
                f"runtime(s), ≤ {WS_WINDOW} unacked, {p.ws_events:,} events/rep, committed",
                f"{rates.text()}; every ack in order: {all(r.verified for r in runs)}"
                f"{versus('B2.ws')}",
                "≥ 1,000 events/s",
                rates.median >= 1000 and all(r.verified for r in runs),
                ratio=versus_rate("B2.ws", rates.median),
                setup=self.tag(*layer),
                value=rates.median,
            )
            out["B2.ws"] = figure
            self.emit(figure)
        if self.wanted(f"{prefix}B3"):
            self.quiet()
            lat, reps = latency(FANOUT, p.fanout_events)
            spread = "inspectors on Daphne B, POST to A" if prefix else "1 Daphne"
            figure = Figure(
                f"{prefix}B3",
                f"fan-out: {FANOUT} inspector sockets on one run @{RATE:.0f} events/s ({spread})",
                f"{lat.ms()}; {exactness(reps)}",
                *target_of(
                    prefix,
                    "every socket gets every event, p99 ≤ 50 ms",
                    (lat.p99 <= 0.050,),
                    all(d.exact for d in reps),
                ),
                baseline=f"bare websockets relay to {FANOUT} sockets p50 {ms(baseline_n.p50)}, "
                f"p99 {ms(baseline_n.p99)}{versus('B3')}",
                ratio=f"p50 {ratio(lat.p50, baseline_n.p50)}, p99 {ratio(lat.p99, baseline_n.p99)}",
                setup=self.tag(*layer),
            )
            out["B3"] = figure
            self.emit(figure)
        return out


def target_of(prefix: str, target: str, checks: tuple[bool, ...], exact: bool) -> tuple[str, bool]:
    """The target text and verdict of a latency figure. B1/B3 have numeric targets; the
    issue's target for B4 (the same on Redis with two Daphnes) is to be reported side by side
    with the in-memory figures, so B4 lines are met when measured exactly (nothing lost,
    duplicated or reordered) and name, for reference, whether the in-memory targets hold."""
    if not prefix:
        return target, all(checks) and exact
    verdict = "also met" if all(checks) else "not met"
    return (
        f"side by side with in-memory/1 Daphne, every event exactly once (the in-memory "
        f"target {target}: {verdict} here)",
        exact,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (the test suite)")
    parser.add_argument("--only", help="comma-separated figure ids or groups, e.g. B1,B4,B8")
    parser.add_argument("--output", help="write the results table here (full run: docs/...)")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    parser.add_argument(
        "--render",
        metavar="JSON",
        help="re-render the results of an earlier run (var/bench-last.json) into --output, "
        "e.g. after editing bench/notes.md; the numbers and the command stay those of that run",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="use a throwaway PostgreSQL cluster (devservers/postgres.py) instead of SQLite",
    )
    parser.add_argument(
        "--redis-layer",
        choices=sorted(REDIS_LAYERS),
        default="pubsub",
        help="the Redis channel layer of the B4 figures (REDIS_CHANNEL_LAYER; default pubsub)",
    )
    args = parser.parse_args(argv)
    # A terminated run still stops its servers (the finally blocks run on SystemExit).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if args.render:
        return render(Path(args.render), Path(args.output or PROJECT / "docs" / "benchmarks.md"))
    profile = QUICK if args.quick else FULL
    only = {item.strip() for item in args.only.split(",")} if args.only else None
    # Only a full run of every figure replaces docs/benchmarks.md by default; a quick or partial
    # run writes only where --output says (its table would drop the other figures).
    whole = not args.quick and only is None
    output = args.output or (str(PROJECT / "docs" / "benchmarks.md") if whole else None)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))

    workdir = Path(tempfile.mkdtemp(prefix="contextadmin-bench-"))
    began = time.monotonic()
    started = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    postgres = None
    inprocess_url = f"sqlite:///{workdir / 'inprocess.sqlite3'}"
    live_url = None
    if args.postgres:
        from devservers.postgres import Postgres

        postgres = Postgres().start()
        inprocess_url = postgres.create_database("bench_inprocess")
        live_url = postgres.create_database("bench_live")
    bench = Bench(profile, workdir, only, live_url, args.redis_layer)
    try:
        from bench import indb

        database = indb.django_setup(inprocess_url)
        bench.machine = Machine.here(database)
        bench.layers = {
            "in-memory": "runs.channels_overrides.SweptInMemoryChannelLayer (channels' own, "
            "swept once a second; 1 Daphne)",
            "redis": f"{REDIS_LAYERS[args.redis_layer]} on {redis_version()} (2 Daphnes)",
        }
        print(f"bench: {profile.name} run, {started}")
        for line in bench.machine.lines(bench.layers):
            print(line)
        steps: list[Callable[[], None]] = [
            bench.live,
            bench.engine,
            bench.in_database,
            bench.ag2,
            bench.impact,
        ]
        steps.append(bench.scale)
        steps.append(bench.webhooks)
        steps.append(bench.reporting)
        for step in steps:
            step()
    finally:
        if postgres is not None:
            from django.db import connections

            connections.close_all()
            postgres.stop()
        if args.keep:
            print(f"bench: kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    seconds = time.monotonic() - began
    missed = [f.id for f in bench.figures if f.met is False]
    print(
        f"bench: {len(bench.figures)} figures in {seconds:.0f} s; "
        f"missed: {', '.join(missed) or 'none'}"
    )
    assert bench.machine is not None
    saved = {
        "figures": [dataclasses.asdict(f) for f in bench.figures],
        "machine": dataclasses.asdict(bench.machine),
        "layers": bench.layers,
        "command": command,
        "profile": profile.name,
        "seconds": seconds,
        "started": started,
    }
    (PROJECT / "var").mkdir(exist_ok=True)
    (PROJECT / "var" / "bench-last.json").write_text(json.dumps(saved, indent=1))
    if output:
        Path(output).write_text(
            report.markdown(
                bench.figures,
                bench.machine,
                bench.layers,
                command,
                profile.name,
                seconds,
                started,
            )
        )
        print(f"bench: wrote {output}")
    expected = [f for f in FIGURES if only is None or bench.wanted(f)]
    absent = [f for f in expected if f not in {fig.id for fig in bench.figures}]
    if absent:
        print(f"bench: figures not produced: {', '.join(absent)}", file=sys.stderr)
        return 1
    return 0


def render(saved_path: Path, output: Path) -> int:
    """Write the markdown of a saved run (its numbers and command unchanged)."""
    saved = json.loads(saved_path.read_text())
    figures = [Figure(**f) for f in saved["figures"]]
    output.write_text(
        report.markdown(
            figures,
            Machine(**saved["machine"]),
            saved["layers"],
            saved["command"],
            saved["profile"],
            saved["seconds"],
            saved["started"],
        )
    )
    print(f"bench: rendered {saved_path} into {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
