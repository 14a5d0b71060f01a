"""RunReporter's background mode over its two transports, side by side in one bench run:
``python -m bench.reporter_transports [--runs 200,1000] [--seconds 30] [--reps 1]``.

For each size and transport (``http``: a POST per batch; ``websocket``: a frame per batch on
the run's ingest socket), on its own fresh Daphne over one SQLite file:

- **paced**: ``runs`` runtimes report 1 event/s each (phases spread over the second) through
  ``RunReporter(background=True, transport=..., flush_interval=0)``: at 1 event/s a batch is
  one event either way, and ``flush_interval=0`` leaves the reporter's 0.2 s linger out of the
  latency (reported apart: it adds up to 0.2 s). ``inspectors`` staff inspector sockets watch
  runs spread over them; every one must get every event of its run exactly once, in order.
  Measured after a 5 s warm-up (the runtimes open their connections; a third of a shorter
  run): committed events/s against offered (the log's rows over the window), p50/p99 event ->
  inspector (the wall clock in the event's text to its arrival), the Daphne's CPU seconds per
  event (so events per Daphne core-second), and the runtimes' CPU likewise.
- **saturated**: ``burst_runs`` runtimes each keep up to 200 events unacknowledged, as fast as
  the server acknowledges them: the committed events/s a Daphne sustains per transport.

Runtimes run in ``procs`` worker processes (this module with ``--worker``), so the one-core
Daphne is not sharing a GIL with them; inspectors run in the bench process. Each configuration
prints one figure line with the machine tag; the repetitions interleave the transports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.live import open_inspector
from bench.machine import Machine, OtherWork
from bench.servers import Site, prepare_site
from bench.stats import percentile
from devservers.processes import PROJECT, Daphne

TRANSPORTS = ("http", "websocket")
RUNS_PER_TOKEN = 100  # API_MAX_SOCKETS_PER_TOKEN is 200; the rate limit is per token too
BURST_WINDOW = 200  # saturated: unacknowledged events a runtime keeps at most
FINAL_GRACE_S = 0.5  # an inspector keeps watching this long after its run's last event


# -- the worker process: runtimes -------------------------------------------------------------
def worker(args: argparse.Namespace) -> None:
    """Start ``args.runs`` reporters, say their run ids, wait for "go", report, say the tally."""
    from contextadmin_sdk.client import RunReporter

    tokens = args.tokens.split(",")
    reporters = [
        RunReporter(
            args.url, tokens[i % len(tokens)], background=True, transport=args.transport,
            flush_interval=args.flush_interval,
        )
        for i in range(args.runs)
    ]
    run_ids = [
        r.start(workflow="Generator", enterprise_id=f"bench-{args.index}-{i}")
        for i, r in enumerate(reporters)
    ]
    started = sum(r.wait_started(120) for r in reporters)
    print(json.dumps({"run_ids": run_ids, "started": started}), flush=True)
    go = json.loads(sys.stdin.readline())
    t0, seconds = go["t0"], go["seconds"]
    cpu0 = time.process_time()
    slowest = 0.0
    sent = 0
    n = len(reporters)
    if args.mode == "paced":
        for tick in range(int(seconds)):
            for i, reporter in enumerate(reporters):
                due = t0 + tick + i / n
                pause = due - time.time()
                if pause > 0:
                    time.sleep(pause)
                began = time.perf_counter()
                reporter.event("agent_text", agent="bench", text=f"{time.time():.6f}")
                slowest = max(slowest, time.perf_counter() - began)
                sent += 1
    else:
        while time.time() < t0 + seconds:
            for reporter in reporters:
                room = BURST_WINDOW - (reporter.next_seq - 1 - reporter.last_acked_seq)
                for _ in range(room):
                    reporter.event("agent_text", agent="bench", text=f"{time.time():.6f}")
                    sent += 1
            time.sleep(0.005)
    cpu = time.process_time() - cpu0
    for reporter in reporters:
        reporter.event("run_status", status="completed")
    delivered = sum(r.close(timeout=120) for r in reporters)
    print(json.dumps({
        "sent": sent, "delivered": delivered, "cpu": cpu, "slowest": slowest,
        "transports": sorted({r.transport_in_use for r in reporters}),
    }), flush=True)


# -- the bench process ------------------------------------------------------------------------
@dataclass
class Outcome:
    transport: str
    mode: str
    runs: int
    seconds: float
    sent: int = 0
    delivered_runs: int = 0
    committed_rate: float = 0.0
    latencies: list[float] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)  # when each latency's event was sent
    missing: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    server_cpu: float = 0.0  # Daphne CPU seconds over the window
    client_cpu: float = 0.0  # the runtimes' (workers') CPU seconds over the window
    slowest_event_call: float = 0.0
    transports: set[str] = field(default_factory=set)

    @property
    def exact(self) -> bool:
        return not (self.missing or self.duplicates or self.out_of_order)

    def second_half_p99(self) -> float:
        """The p99 of the events sent in the window's second half: a server that caught up
        after the warm-up's backlog shows it here, one falling behind grows."""
        middle = (min(self.sent_at) + max(self.sent_at)) / 2
        late = [v for v, t in zip(self.latencies, self.sent_at, strict=True) if t >= middle]
        return percentile(late, 99)

    def line(self, tag: str) -> str:
        committed_events = self.committed_rate * self.seconds
        per_core = committed_events / self.server_cpu if self.server_cpu else float("nan")
        client = self.client_cpu / max(self.sent, 1) * 1e6
        offered = self.runs if self.mode == "paced" else float("nan")
        latency = (
            f"event -> inspector p50 {percentile(self.latencies, 50) * 1e3:.1f} ms, "
            f"p99 {percentile(self.latencies, 99) * 1e3:.1f} ms (n={len(self.latencies)}), "
            f"p99 of the second half {self.second_half_p99() * 1e3:.1f} ms; "
            if self.latencies else ""
        )
        return (
            f"B11.{'ws' if self.transport == 'websocket' else 'http'}.{self.mode} "
            f"{self.runs} runs over {'/'.join(sorted(self.transports))}: "
            f"committed {self.committed_rate:,.0f} events/s"
            + (f" of {offered:,.0f} offered" if self.mode == "paced" else "")
            + f"; {latency}"
            f"exactly once {'yes' if self.exact else 'NO'} (missing {self.missing}, "
            f"duplicates {self.duplicates}, out of order {self.out_of_order}); "
            f"runs fully acknowledged {self.delivered_runs}/{self.runs}; "
            f"Daphne {self.server_cpu / self.seconds:.0%} of a core, "
            f"{per_core:,.0f} events per Daphne core-second; runtimes {client:.0f} µs CPU "
            f"per event; slowest event() call {self.slowest_event_call * 1e3:.2f} ms | {tag}"
        )


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def events_stored(database: Path) -> int:
    with sqlite3.connect(database, timeout=30) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM runs_runevent").fetchone()[0])


async def watch(ws: Any, outcome: Outcome, *, since: float, until: float) -> None:
    """One inspector: the latency of every event sent after ``since`` (the warm-up, when the
    runtimes open their connections, left out); count missing, duplicates and disorder.
    Watches until ``until``, or ``FINAL_GRACE_S`` after the run's last event (its run_status)."""
    last = 0
    seen: set[int] = set()
    try:
        while time.time() < until:
            try:
                raw = await asyncio.wait_for(ws.recv(), max(0.1, until - time.time()))
            except TimeoutError:
                break
            now = time.time()
            message = orjson.loads(raw)
            if message.get("type") != "event":
                continue
            seq = message["seq"]
            if seq in seen:
                outcome.duplicates += 1
                continue
            if seq != last + 1:
                outcome.out_of_order += 1
            seen.add(seq)
            last = seq
            if message["event"].get("type") == "run_status":  # the run's last event: a late
                until = min(until, time.time() + FINAL_GRACE_S)  # duplicate still counts
            sent_at = message["event"].get("text")  # the run's final run_status has none
            if sent_at is not None and float(sent_at) >= since:
                outcome.latencies.append(now - float(sent_at))
                outcome.sent_at.append(float(sent_at))
    finally:
        await ws.close()
    outcome.missing += max(0, last - len(seen))


async def measure(
    site: Site, daphne: Daphne, tokens: list[str], *, transport: str, mode: str, runs: int,
    seconds: float, inspectors: int, procs: int,
) -> Outcome:
    outcome = Outcome(transport, mode, runs, seconds)
    shares = [runs // procs + (1 if i < runs % procs else 0) for i in range(procs)]
    env = {**os.environ, "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}"}
    workers = []
    per_worker = -(-max(shares) // RUNS_PER_TOKEN)  # each worker its own tokens
    for index, share in enumerate(shares):
        own = tokens[index * per_worker:(index + 1) * per_worker]
        workers.append(subprocess.Popen(
            [sys.executable, "-m", "bench.reporter_transports", "--worker", "--url", daphne.url,
             "--tokens", ",".join(own), "--transport", transport, "--runs", str(share),
             "--mode", mode, "--index", str(index), "--flush-interval", "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=PROJECT, env=env,
        ))
    run_ids: list[str] = []
    for process in workers:
        assert process.stdout is not None
        hello = json.loads(process.stdout.readline())
        run_ids += hello["run_ids"]
    watched = [run_ids[j * len(run_ids) // inspectors] for j in range(inspectors)]
    sockets = [await open_inspector(daphne, site, run_id) for run_id in watched] if (
        mode == "paced") else []
    database = Path(site.database_url.removeprefix("sqlite:///"))
    t0 = time.time() + 1.0
    for process in workers:
        assert process.stdin is not None
        process.stdin.write(json.dumps({"t0": t0, "seconds": seconds}) + "\n")
        process.stdin.flush()
    assert daphne.process is not None
    pid = daphne.process.pid
    warm = t0 + min(5.0, seconds / 3)  # the runtimes open their connections (short runs: less)
    watchers = [
        asyncio.ensure_future(watch(ws, outcome, since=warm, until=t0 + seconds + 5))
        for ws in sockets
    ]
    await asyncio.sleep(max(0.0, warm - time.time()))
    rows0, cpu0, clock0 = events_stored(database), process_cpu(pid), time.time()
    await asyncio.sleep(max(0.0, t0 + seconds - time.time()))
    rows1, cpu1, clock1 = events_stored(database), process_cpu(pid), time.time()
    outcome.committed_rate = (rows1 - rows0) / (clock1 - clock0)
    outcome.server_cpu = (cpu1 - cpu0) * seconds / (clock1 - clock0)
    await asyncio.gather(*watchers)
    for process in workers:
        assert process.stdout is not None
        tally = json.loads(process.stdout.readline())
        process.wait(timeout=60)
        outcome.sent += tally["sent"]
        outcome.delivered_runs += tally["delivered"]
        outcome.client_cpu += tally["cpu"]
        outcome.slowest_event_call = max(outcome.slowest_event_call, tally["slowest"])
        outcome.transports.update(tally["transports"])
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tokens", help=argparse.SUPPRESS)
    parser.add_argument("--transport", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--flush-interval", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="paced", help=argparse.SUPPRESS)
    parser.add_argument("--runs", default="200,1000", help="paced sizes (runs), comma-separated")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per size")
    parser.add_argument("--inspectors", type=int, default=100)
    parser.add_argument("--burst-runs", type=int, default=200, help="saturated: runs (0: skip)")
    parser.add_argument("--burst-seconds", type=float, default=15.0)
    parser.add_argument("--procs", type=int, default=4, help="worker processes of runtimes")
    parser.add_argument("--reps", type=int, default=1, help="repetitions (interleaved)")
    parser.add_argument("--transports", default=",".join(TRANSPORTS), help="which, in order")
    args = parser.parse_args()
    if args.worker:
        args.runs = int(args.runs)
        worker(args)
        return
    sizes = [int(size) for size in args.runs.split(",") if size]
    with tempfile.TemporaryDirectory(prefix="bench-transports-") as tmp:
        need = args.procs * -(-max([*sizes, args.burst_runs]) // (args.procs * RUNS_PER_TOKEN))
        site = prepare_site(Path(tmp), tokens=need)
        env = site.env()
        tokens = list(site.tokens)
        machine = Machine.here(f"SQLite {sqlite3.sqlite_version}")
        print("\n".join(machine.lines({"memory": "channels InMemoryChannelLayer"})), flush=True)
        plan = [("paced", size) for size in sizes]
        if args.burst_runs:
            plan.append(("saturated", args.burst_runs))
        for rep in range(args.reps):
            for mode, size in plan:
                chosen = args.transports.split(",")
                order = chosen if rep % 2 == 0 else chosen[::-1]
                for transport in order:
                    other = OtherWork()
                    log = Path(tmp) / f"daphne-{transport}-{mode}-{size}-{rep}.log"
                    daphne = Daphne(env=env, log_path=log).start()
                    try:
                        outcome = asyncio.run(measure(
                            site, daphne, tokens, transport=transport, mode=mode, runs=size,
                            seconds=args.seconds if mode == "paced" else args.burst_seconds,
                            inspectors=min(args.inspectors, size), procs=args.procs,
                        ))
                    finally:
                        daphne.stop()
                    tag = machine.tag("memory, 1 Daphne", None, other.share())
                    print(outcome.line(tag), flush=True)


if __name__ == "__main__":
    main()
