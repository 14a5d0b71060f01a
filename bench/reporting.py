"""Runtimes reporting the way they really do (B11.http, B11.ws, B11.prod, B11.post):
``RunReporter`` in background mode over HTTP, or over the ingest websocket (B11.ws).

``many_reporters`` keeps ``runs`` runs live at 1 event/s each, every run reported by its own
``RunReporter(background=True)`` (one sender thread each, batched POSTs to
``/api/runs/<id>/events/``, as the AG2 integration does), with ``inspectors`` inspector
sockets spread over the runs, and checks every socket got every event of its run exactly once
and in order. Two latencies per event: ``reporter.event()`` → the POST that carried it leaves
(the reporter's batching, ``flush_interval`` 0.2 s), and that POST → the inspector (what the
server adds). The POST's departure is seen by wrapping ``http.client.HTTPConnection.request``
in this process (the reporter's sender uses it); nothing in ``contextadmin_sdk.client`` is changed.

``posts_closed_loop`` is the events POST alone: ``clients`` runtimes each POST one-event
batches back to back; the server's committed events/s.

The servers (one Daphne on SQLite, or nginx + two Daphnes + Redis + PostgreSQL) are set up
by bench/reporting_figures.py; the clients run in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from contextadmin_sdk.client import RunReporter
from websockets.exceptions import InvalidHandshake
from websockets.sync.connection import Connection as WebsocketConnection

from bench.http import Http, HttpError
from bench.live import event, event_arrivals_watch, ws_connect
from bench.stats import percentile

perf = time.perf_counter
STARTS_PER_WAVE = 100  # reporters started together, then 0.1 s
INSPECTOR_PATIENCE_S = 60.0  # how long an inspector keeps reconnecting at set-up
TRANSPORTS = ("http", "websocket")  # how a bench runtime's RunReporter sends: reporter_make


def reporter_make(*, base: str, secret: str, transport: str = "http") -> RunReporter:
    """One runtime's reporter, in background mode as the AG2 integration runs it. The one
    place the bench chooses how reporters send: "http" is the events POST (B11.http,
    B11.prod), "websocket" a batch frame on the run's ingest socket (B11.ws); named, not
    "auto", so a figure never depends on what is installed."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport: {transport!r} is not one of {TRANSPORTS}")
    return RunReporter(base, secret, background=True, transport=transport)


# -- what left when: the reporters' POSTs -------------------------------------------------------
class PostLog:
    """Record each batch as it leaves this process, as an events POST or as a batch frame on
    an ingest socket (the websockets sync client's ``send``): (time, path, body)."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, str, bytes]] = []
        self._original: Any = None
        self._original_send: Any = None

    def __enter__(self) -> PostLog:
        original = self._original = http.client.HTTPConnection.request
        sent = self.sent

        def request(conn: Any, method: str, url: str, body: Any = None, *a: Any, **k: Any) -> Any:
            if method == "POST" and url.endswith("/events/"):
                sent.append((perf(), url, body))  # list.append: safe across sender threads
            return original(conn, method, url, body, *a, **k)

        http.client.HTTPConnection.request = request  # type: ignore[method-assign]
        original_send = self._original_send = WebsocketConnection.send

        def send(conn: Any, message: Any, *a: Any, **k: Any) -> Any:
            if isinstance(message, bytes) and message.startswith(b'{"events":'):
                sent.append((perf(), conn.request.path, message))
            return original_send(conn, message, *a, **k)

        WebsocketConnection.send = send  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        http.client.HTTPConnection.request = self._original  # type: ignore[method-assign]
        WebsocketConnection.send = self._original_send  # type: ignore[method-assign]

    def first_sends(self) -> dict[str, dict[int, float]]:
        """run id -> seq -> when the first POST carrying it left (a retry is not counted)."""
        out: dict[str, dict[int, float]] = {}
        for at, url, body in self.sent:  # /api/runs/<id>/events/ or /ws/ingest/<id>/
            parts = url.rstrip("/").split("/")
            run_id = parts[-1] if parts[-2] == "ingest" else parts[-2]
            seen = out.setdefault(run_id, {})
            for item in orjson.loads(body)["events"]:
                seen.setdefault(int(item["seq"]), at)
        return out


# -- CPU of process trees ----------------------------------------------------------------------
def _stat(pid: int) -> tuple[int, float] | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its children (PostgreSQL's backends, nginx's worker)."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                stats[int(entry)] = found
    total, parents = 0.0, {pid}
    if pid in stats:
        total += stats[pid][1]
    for child, (ppid, cpu) in stats.items():
        if ppid in parents and child != pid:
            total += cpu
    return total


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


# -- many runs, each reported by a RunReporter --------------------------------------------------
@dataclass
class Reported:
    runs: int
    inspectors: int
    events: int  # measured, per run
    total: int  # per run, the warm-up included
    server_latencies: list[float] = field(default_factory=list)  # POST leaves -> inspector
    whole_latencies: list[float] = field(default_factory=list)  # event() -> inspector
    batching: list[float] = field(default_factory=list)  # event() -> POST leaves
    delivered: int = 0
    missing: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    unacked_runs: int = 0  # runs whose reporter did not get every event acknowledged
    reporter_errors: list[str] = field(default_factory=list)
    posts: int = 0
    committed_rate: float = 0.0  # events acknowledged per second while sending
    offered_rate: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU s per wall s
    late_events: int = 0  # event() calls > 50 ms after their scheduled time
    setup_seconds: float = 0.0

    @property
    def exact(self) -> bool:
        return not (
            self.missing or self.duplicates or self.out_of_order or self.unacked_runs
            or self.reporter_errors
        )

    def cpu_text(self) -> str:
        return ", ".join(f"{name} {share:.0%}" for name, share in self.cpu.items())


async def _create_runs(base: str, secrets: Sequence[str], run_ids: Sequence[str]) -> None:
    host, port = base.removeprefix("http://").split(":")
    gate = asyncio.Semaphore(8)

    async def create(index: int) -> None:
        async with gate:
            client = Http(host, int(port), token=secrets[index])
            try:
                await client.post_json("/api/runs/", {
                    "workflow": "Generator", "enterprise_id": f"b11-{index}",
                    "run_id": run_ids[index],
                })
            finally:
                await client.close()

    await asyncio.gather(*(create(i) for i in range(len(run_ids))))


async def _open_inspector(ws_base: str, origin: str, session: str, run_id: str) -> Any:
    """One inspector socket, retried for up to a minute as the inspector page reconnects: an
    overloaded Daphne refuses upgrades (a 502 through nginx) or drops them (no HTTP answer) while
    runtimes start."""
    deadline = perf() + INSPECTOR_PATIENCE_S
    attempt = 0
    while True:
        try:
            ws = await ws_connect(
                f"{ws_base}/ws/runs/{run_id}/",
                {"Origin": origin, "Cookie": f"sessionid={session}"},
            )
            break
        except (InvalidHandshake, OSError, TimeoutError):  # a refused or dropped upgrade
            attempt += 1
            if perf() > deadline:
                raise
            await asyncio.sleep(min(0.5 * attempt, 5.0))
    first = orjson.loads(await asyncio.wait_for(ws.recv(), 60))
    if first.get("type") != "snapshot":
        raise RuntimeError(f"inspector: expected a snapshot first, got {first!r}")
    return ws


async def many_reporters(
    *,
    base: str,
    ws_base: str,
    session: str,
    secrets: Sequence[str],  # one per run (a token serves at most 1,000 running runs)
    runs: int,
    inspectors: int,
    events: int,
    warmup: int,
    pids: dict[str, int],  # process name -> pid whose tree's CPU is reported
    drain: float = 120.0,
    transport: str = "http",  # reporter_make's
) -> Reported:
    total = warmup + events
    result = Reported(runs, inspectors, events, total)
    began = perf()
    run_ids = [os.urandom(16).hex() for _ in range(runs)]
    await _create_runs(base, secrets, run_ids)
    reporters = [
        reporter_make(base=base, secret=secrets[i], transport=transport) for i in range(runs)
    ]
    for index, reporter in enumerate(reporters):
        reporter.start(workflow="Generator", enterprise_id=f"b11-{index}", run_id=run_ids[index])
        if index % STARTS_PER_WAVE == STARTS_PER_WAVE - 1:  # runtimes start over a few seconds,
            await asyncio.sleep(0.1)  # not all in one millisecond (Daphne's accept backlog)
    watched = [j * runs // inspectors for j in range(inspectors)]
    gate = asyncio.Semaphore(8)

    async def inspector(run: int) -> Any:
        async with gate:
            return await _open_inspector(ws_base, base, session, run_ids[run])

    sockets = await asyncio.gather(*(inspector(r) for r in watched))
    result.setup_seconds = perf() - began
    arrivals: list[dict[int, float]] = [{} for _ in sockets]
    watchers = [
        asyncio.create_task(event_arrivals_watch(ws, seen, total=total, result=result))
        for ws, seen in zip(sockets, arrivals, strict=True)
    ]
    frames = [event(seq) for seq in range(1, total + 1)]
    called: list[dict[int, float]] = [{} for _ in range(runs)]
    start = perf() + 0.2
    schedule = sorted(
        (start + (seq - 1) + index / runs, index, seq)
        for index in range(runs)
        for seq in range(1, total + 1)
    )
    cpu0: dict[str, float] = {}
    wall0 = acked0 = 0.0
    with PostLog() as posts:
        for at, index, seq in schedule:
            if seq == warmup + 1 and not cpu0:
                cpu0 = {name: tree_cpu(pid) for name, pid in pids.items()}
                cpu0["bench client"] = own_cpu()
                wall0 = perf()
                acked0 = sum(r.last_acked_seq for r in reporters)
            delay = at - perf()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.050:
                result.late_events += 1
            fields = {k: v for k, v in frames[seq - 1].items() if k not in ("type", "seq")}
            called[index][seq] = perf()
            reporters[index].event(frames[seq - 1]["type"], **fields)
        sending = perf() - wall0
        acked = sum(r.last_acked_seq for r in reporters)
        result.committed_rate = (acked - acked0) / sending
        result.offered_rate = runs  # 1 event/s per run
        wall = perf() - wall0
        result.cpu = {
            name: (tree_cpu(pid) - cpu0[name]) / wall for name, pid in pids.items()
        }
        result.cpu["bench client"] = (own_cpu() - cpu0["bench client"]) / wall
        deadline = perf() + drain  # everything acknowledged, or the cap
        while perf() < deadline and any(r.last_acked_seq < total for r in reporters):
            await asyncio.sleep(0.2)
        with ThreadPoolExecutor(max_workers=64) as pool:
            loop = asyncio.get_running_loop()
            closed = await asyncio.gather(
                *(loop.run_in_executor(pool, r.close, 5.0) for r in reporters)
            )
        deadline = perf() + 30
        while perf() < deadline and any(len(a) < total for a in arrivals):
            await asyncio.sleep(0.1)
    for task in watchers:
        task.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    result.unacked_runs = sum(1 for ok in closed if not ok)
    result.reporter_errors = [r.error for r in reporters if r.error][:3]
    result.posts = len(posts.sent)
    left = posts.first_sends()
    for run_index, r in enumerate(reporters):
        for seq in range(warmup + 1, total + 1):
            if seq in left.get(r.run_id or "", {}):
                result.batching.append(left[r.run_id or ""][seq] - called[run_index][seq])
    for j, seen in enumerate(arrivals):
        run = watched[j]
        for seq in range(1, total + 1):
            if seq not in seen:
                result.missing += 1
                continue
            result.delivered += 1
            if seq > warmup:
                result.whole_latencies.append(seen[seq] - called[run][seq])
                gone = left.get(run_ids[run], {}).get(seq)
                if gone is not None:
                    result.server_latencies.append(seen[seq] - gone)
    return result


# -- the events POST alone ---------------------------------------------------------------------
@dataclass
class Posted:
    clients: int
    seconds: float
    committed: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.committed / self.seconds


async def posts_closed_loop(
    *,
    base: str,
    secrets: Sequence[str],
    clients: int,
    seconds: float,
    pids: dict[str, int],
) -> Posted:
    """``clients`` runtimes, one run each, POST one-event batches back to back for
    ``seconds``; every answer is checked (its ack names the seq sent)."""
    result = Posted(clients, seconds)
    run_ids = [os.urandom(16).hex() for _ in range(clients)]
    await _create_runs(base, secrets, run_ids)
    host, port = base.removeprefix("http://").split(":")
    stop = threading.Event()
    barrier = asyncio.Event()

    async def runtime(index: int) -> None:
        client = Http(host, int(port), token=secrets[index])
        path = f"/api/runs/{run_ids[index]}/events/"
        seq = 0
        await barrier.wait()
        try:
            while not stop.is_set():
                seq += 1
                body = orjson.dumps({"events": [{**event(seq), "seq": seq}]})
                sent = perf()
                try:
                    answer = orjson.loads(await client.request("POST", path, body))
                except (HttpError, OSError, asyncio.IncompleteReadError) as exc:
                    result.errors.append(f"{type(exc).__name__}: {exc}"[:200])
                    return
                if answer["acks"][0]["seq"] != seq:
                    result.errors.append(f"run {index}: sent {seq}, acked {answer['acks']}")
                    return
                if not stop.is_set():
                    result.committed += 1
                    result.latencies.append(perf() - sent)
        finally:
            await client.close()

    tasks = [asyncio.create_task(runtime(i)) for i in range(clients)]
    await asyncio.sleep(0.5)  # every client connected and waiting
    cpu0 = {name: tree_cpu(pid) for name, pid in pids.items()}
    barrier.set()
    wall0 = perf()
    await asyncio.sleep(seconds)
    stop.set()
    wall = perf() - wall0
    result.seconds = wall
    result.cpu = {name: (tree_cpu(pid) - cpu0[name]) / wall for name, pid in pids.items()}
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
    return result


def p(values: Sequence[float], q: float) -> str:
    return f"{percentile(values, q) * 1e3:.1f} ms"
