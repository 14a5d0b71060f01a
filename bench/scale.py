"""Scale figures on real servers (B10, B11): one long run, and many runs live at once.

B10 ingests one run through the API (batched ``POST /api/runs/<id>/events/`` with ``seq``,
back to back) and, at each checkpoint (100,000 events: the baseline; 1,000,000: the figure),
measures the database's growth per event, the run page (``GET /runs/<id>/`` as a staff user,
and the page made usable: the page, its inspector socket's snapshot and the streamed window of
past events), the state at random seqs (``GET /api/runs/<id>/state/?at=N``) and the Daphne
process's RSS.

B11 keeps ``runs`` runs live at 1 event/s each, every runtime on its own ``/ws/ingest/``
socket, with ``inspectors`` inspector sockets spread over the runs, and checks every socket
got every event of its run exactly once and in order; the baseline is the same with 10 runs,
each on a fresh Daphne in the same bench run.

Clients run in the bench process; each configuration has its own Daphne (in-memory layer) on
its own fresh database (a SQLite file, or a database on the throwaway PostgreSQL cluster).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import random
import re
import resource
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from bench.live import event, event_arrivals_watch, open_inspector, ws_connect
from bench.servers import Site, daphnes, prepare_site, site_copy
from bench.stats import Latency, Timings, percentile
from devservers.processes import Daphne

perf = time.perf_counter
MIB = 1024 * 1024


@dataclass(frozen=True)
class ScaleProfile:
    checkpoints: tuple[int, ...]  # B10: events in the run at each measurement (first: baseline)
    batch: int  # B10: events per POST (API_MAX_EVENTS_PER_BATCH is 1,000)
    state_samples: int  # B10: GET state ?at= per checkpoint
    page_samples: int  # B10: run page opens per checkpoint
    runs: int  # B11
    baseline_runs: int  # B11
    inspectors: int  # B11
    seconds: float  # B11: measured events per run (1 event/s)
    warmup: int  # B11: events per run before the measured ones
    runs_per_token: int  # B11: runtimes per API token (API_MAX_SOCKETS_PER_TOKEN is 200)


SCALE_FULL = ScaleProfile((100_000, 1_000_000), 1000, 200, 30, 1000, 10, 100, 60, 5, 100)
SCALE_QUICK = ScaleProfile((1_000, 5_000), 1000, 20, 3, 20, 2, 10, 1, 1, 10)


def scale_profile(name: str) -> ScaleProfile:
    return SCALE_QUICK if name == "quick" else SCALE_FULL


# -- databases and processes ------------------------------------------------------------------
def fresh_database(workdir: Path, live_database: str | None, name: str) -> str:
    """A new, empty database for one figure: a SQLite file, or a database created on the
    PostgreSQL cluster of ``live_database``."""
    if live_database is None:
        return f"sqlite:///{workdir / f'{name}.sqlite3'}"
    import psycopg

    with psycopg.connect(live_database, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(live_database)
    return urlunsplit(parts._replace(path=f"/{name}"))


@dataclass(frozen=True)
class Storage:
    total: int  # bytes
    parts: dict[str, int]  # table (with its indexes) -> bytes


def storage(database_url: str) -> Storage:
    """The database's size on disk: SQLite main file + WAL after a checkpoint (with dbstat's
    bytes per table, its indexes included), or PostgreSQL's ``pg_database_size``."""
    if database_url.startswith("sqlite"):
        path = Path(urlsplit(database_url).path)
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
            parts: dict[str, int] = {}
            with contextlib.suppress(sqlite3.Error):  # dbstat may be compiled out
                for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY 1"):
                    table = owner.get(name, name)
                    parts[table] = parts.get(table, 0) + int(size)
        wal = path.with_name(path.name + "-wal")
        total = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        return Storage(total, parts)
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        total = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        rows = conn.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class "
            "WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
        ).fetchall()
    return Storage(int(total), {name: int(size) for name, size in rows})


def rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, bytes."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) * 1024
    return values["VmRSS"], values["VmHWM"]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Client:
    """A blocking keep-alive HTTP/1.1 client (http.client): one request at a time."""

    def __init__(self, server: Daphne, headers: dict[str, str]) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.headers = headers

    def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """One request; a keep-alive connection the server closed while idle is reopened and
        the request sent once more (safe here: GETs, and POSTs of events with their seq)."""
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            self.conn.close()
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        data = response.read()
        if not 200 <= response.status < 300:
            raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:300]!r}")
        return data

    def close(self) -> None:
        self.conn.close()


# -- B10: one long run ------------------------------------------------------------------------
@dataclass
class Checkpoint:
    events: int
    ingest_seconds: float  # this segment's ingest (since the previous checkpoint)
    segment_events: int
    storage: Storage  # growth since the run started
    page: Timings  # GET /runs/<id>/
    page_ready: Timings  # GET + the inspector socket's snapshot + the streamed window
    window: int  # events the page's socket streamed after its snapshot
    state: Timings  # GET /api/runs/<id>/state/?at=<random seq>
    rss: int  # after this checkpoint's reads
    peak_rss: int

    @property
    def rate(self) -> float:
        return self.segment_events / self.ingest_seconds

    def bytes_per_event(self) -> float:
        return self.storage.total / self.events


@dataclass
class LongRun:
    checkpoints: list[Checkpoint]
    verified: bool  # the run's last_seq is the last checkpoint after every POST


def b10_long_run(site: Site, server: Daphne, database_url: str, p: ScaleProfile) -> LongRun:
    assert server.process is not None
    pid = server.process.pid
    api = Client(server, {"Authorization": f"Bearer {site.token}"})
    browser = Client(server, {"Cookie": f"sessionid={site.session}"})
    rng = random.Random(10)
    try:
        run_id = orjson.loads(
            api.request(
                "POST",
                "/api/runs/",
                orjson.dumps({"workflow": "Generator", "enterprise_id": "bench-b10"}),
            )
        )["run_id"]
        before = storage(database_url)
        path = f"/api/runs/{run_id}/events/"
        done, verified, out = 0, True, []
        for target in p.checkpoints:
            began = perf()
            segment = target - done
            while done < target:
                last = min(done + p.batch, target)
                body = orjson.dumps({"events": [event(s) for s in range(done + 1, last + 1)]})
                reply = orjson.loads(api.request("POST", path, body))
                verified = verified and reply["last_seq"] == last
                done = last
            ingest_seconds = perf() - began
            after = storage(database_url)
            grown = Storage(
                after.total - before.total,
                {k: v - before.parts.get(k, 0) for k, v in after.parts.items()},
            )
            pages, ready, window = page_opens(browser, server, site, run_id, done, p.page_samples)
            state = []
            for _ in range(p.state_samples):
                at = rng.randint(1, done)
                t0 = perf()
                body = api.request("GET", f"/api/runs/{run_id}/state/?at={at}")
                state.append(perf() - t0)
                verified = verified and orjson.loads(body)["seq"] == at
            now, peak = rss(pid)
            out.append(
                Checkpoint(
                    done,
                    ingest_seconds,
                    segment,
                    grown,
                    Timings(tuple(pages)),
                    Timings(tuple(ready)),
                    window,
                    Timings(tuple(state)),
                    now,
                    peak,
                )
            )
        return LongRun(out, verified)
    finally:
        api.close()
        browser.close()


def page_opens(
    browser: Client, server: Daphne, site: Site, run_id: str, last_seq: int, samples: int
) -> tuple[list[float], list[float], int]:
    """Open the run page ``samples`` times: the GET alone, and the GET followed by what the
    page's script does before it shows the run (its inspector socket from ``stream_after``:
    the snapshot, then every event up to the last)."""
    pages, ready = [], []
    window = 0
    for _ in range(samples):
        t0 = perf()
        html = browser.request("GET", f"/runs/{run_id}/").decode()
        pages.append(perf() - t0)
        found = re.search(r'"stream_after":\s*(\d+)', html)
        after = int(found.group(1)) if found else 0
        window = asyncio.run(_page_socket(server, site, run_id, after, last_seq))
        ready.append(perf() - t0)
    return pages, ready, window


async def _page_socket(server: Daphne, site: Site, run_id: str, after: int, last: int) -> int:
    ws = await ws_connect(
        f"{server.ws_url}/ws/runs/{run_id}/?after={after}",
        {"Origin": server.url, "Cookie": f"sessionid={site.session}"},
    )
    try:
        first = orjson.loads(await asyncio.wait_for(ws.recv(), 60))
        if first.get("type") != "snapshot":
            raise RuntimeError(f"run page socket: expected a snapshot, got {first!r}")
        seq, count = int(first["seq"]), 0
        while seq < last:
            message = orjson.loads(await asyncio.wait_for(ws.recv(), 60))
            if message.get("type") == "event":
                seq, count = int(message["seq"]), count + 1
        return count
    finally:
        await ws.close()


# -- B11: many runs live at once -------------------------------------------------------------
@dataclass
class ManyRuns:
    runs: int
    inspectors: int
    events_per_run: int  # measured
    total: int  # per run, the warm-up included
    latencies: list[float] = field(default_factory=list)  # send -> inspector
    sent_at: list[float] = field(default_factory=list)  # when each latency's event was sent
    ack_latencies: list[float] = field(default_factory=list)  # send -> ack (committed)
    drained: float = 0.0  # seconds from the last send until all arrived (or the wait ended)
    first_send: float = 0.0
    last_ack: float = 0.0

    @property
    def committed_rate(self) -> float:
        """Events committed per second, from the first send to the last ack."""
        span = self.last_ack - self.first_send
        return self.runs * self.total / span if span > 0 else float("nan")

    queued: list[float] = field(default_factory=list)  # scheduled time -> inspector
    delivered: int = 0
    missing: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    acks: int = 0  # acks received, in order
    acks_bad: int = 0  # an ack out of order, or an error instead
    wait_ended: str = ""
    late_sends: int = 0  # sends that left > 50 ms after their scheduled time
    rss_start: int = 0  # the Daphne with every run started and every socket open
    rss_end: int = 0
    peak_rss: int = 0
    server_cpu: float = 0.0  # the Daphne's CPU seconds per second while events flowed
    client_cpu: float = 0.0  # the bench process's
    setup_seconds: float = 0.0

    @property
    def exact(self) -> bool:
        return not (self.missing or self.duplicates or self.out_of_order) and self.acks_ok

    @property
    def acks_ok(self) -> bool:
        return not self.acks_bad and self.acks == self.runs * self.total

    @property
    def latency(self) -> Latency:
        return Latency.of([self.latencies])

    def trend(self) -> str:
        """p50 of the events sent in the first and in the last third of the measured time:
        a steady server keeps them alike, a falling-behind one grows."""
        if not self.sent_at:
            return "n/a"
        t0, t1 = min(self.sent_at), max(self.sent_at)
        third = (t1 - t0) / 3
        first = [v for v, t in zip(self.latencies, self.sent_at, strict=True) if t < t0 + third]
        last = [v for v, t in zip(self.latencies, self.sent_at, strict=True) if t > t1 - third]
        return f"{_ms(percentile(first, 50))} → {_ms(percentile(last, 50))}"


async def b11_many_runs(
    site: Site,
    server: Daphne,
    secrets: Sequence[str],
    *,
    runs: int,
    inspectors: int,
    events: int,
    warmup: int,
    runs_per_token: int,
    drain: float = 600.0,
    stall: float = 30.0,
) -> ManyRuns:
    """``runs`` runtimes, each on its own /ws/ingest/ socket, send 1 event/s each (phases
    spread evenly over the second); ``inspectors`` sockets watch runs spread evenly over them.
    Latency is from just before the frame's send to the event's arrival on the socket."""
    assert server.process is not None
    pid = server.process.pid
    total = warmup + events
    result = ManyRuns(runs, inspectors, events, total)
    began_setup = perf()
    owners = [secrets[i // runs_per_token] for i in range(runs)]
    gate = asyncio.Semaphore(8)

    async def start(index: int) -> str:
        async with gate:
            client = Client(server, {"Authorization": f"Bearer {owners[index]}"})
            try:
                body = orjson.dumps({"workflow": "Generator", "enterprise_id": f"b11-{index}"})
                reply = await asyncio.to_thread(client.request, "POST", "/api/runs/", body)
            finally:
                client.close()
            return str(orjson.loads(reply)["run_id"])

    run_ids = await asyncio.gather(*(start(i) for i in range(runs)))

    async def ingest_socket(index: int) -> Any:
        async with gate:
            return await ws_connect(
                f"{server.ws_url}/ws/ingest/{run_ids[index]}/",
                {"Authorization": f"Bearer {owners[index]}"},
            )

    async def inspector(index: int) -> Any:
        async with gate:
            return await open_inspector(server, site, run_ids[index])

    watched = [j * runs // inspectors for j in range(inspectors)]
    senders = await asyncio.gather(*(ingest_socket(i) for i in range(runs)))
    sockets = await asyncio.gather(*(inspector(r) for r in watched))
    result.setup_seconds = perf() - began_setup
    await asyncio.sleep(1.0)
    result.rss_start = rss(pid)[0]

    sent: list[dict[int, float]] = [{} for _ in range(runs)]
    arrivals: list[dict[int, float]] = [{} for _ in sockets]
    done = asyncio.Event()
    finished = [0, 0]  # inspectors complete, runtimes fully acked

    async def acks(index: int) -> None:
        ws, expected = senders[index], 1
        while expected <= total:
            message = orjson.loads(await ws.recv())
            now = perf()
            if message.get("type") != "ack" or message.get("seq") != expected:
                result.acks_bad += 1
                raise RuntimeError(f"ingest {index}: expected ack {expected}, got {message!r}")
            if expected > warmup:
                result.ack_latencies.append(now - sent[index][expected])
            result.last_ack = max(result.last_ack, now)
            result.acks += 1
            expected += 1
        finished[1] += 1
        if finished == [len(sockets), runs]:
            done.set()

    async def watch(j: int) -> None:
        await event_arrivals_watch(sockets[j], arrivals[j], total=total, result=result)
        if len(arrivals[j]) == total:
            finished[0] += 1
            if finished == [len(sockets), runs]:
                done.set()

    tasks = [asyncio.create_task(acks(i)) for i in range(runs)]
    tasks += [asyncio.create_task(watch(j)) for j in range(len(sockets))]
    frames = [orjson.dumps(event(s)).decode() for s in range(1, total + 1)]
    start = perf() + 0.1
    result.first_send = start
    schedule = sorted(
        (start + (seq - 1) + index / runs, index, seq)
        for index in range(runs)
        for seq in range(1, total + 1)
    )
    cpu0, own0, wall0 = cpu_seconds(pid), _own_cpu(), None
    for at, index, seq in schedule:
        if seq == warmup + 1 and wall0 is None:
            cpu0, own0, wall0 = cpu_seconds(pid), _own_cpu(), perf()
        delay = at - perf()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.050:
            result.late_sends += 1
        sent[index][seq] = perf()
        await senders[index].send(frames[seq - 1])
    # Wait for every ack and delivery while the server still makes progress (it may be far
    # behind): until all arrived, nothing arrived for ``stall`` s, or ``drain`` s passed.
    last_send = perf()
    progress, progressed = -1, perf()
    result.wait_ended = "all arrived"
    while not done.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 2.0)
        now = perf()
        count = result.acks + sum(len(seen) for seen in arrivals)
        if count != progress:
            progress, progressed = count, now
        elif now - progressed > stall:
            result.wait_ended = f"nothing arrived for {stall:.0f} s"
            break
        if now - last_send > drain and not done.is_set():
            result.wait_ended = f"the wait's cap of {drain:.0f} s"
            break
    result.drained = perf() - last_send
    wall = perf() - (wall0 or start)
    result.server_cpu = (cpu_seconds(pid) - cpu0) / wall
    result.client_cpu = (_own_cpu() - own0) / wall
    result.rss_end, result.peak_rss = rss(pid)
    for task in tasks:
        task.cancel()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    errors = [o for o in outcomes if isinstance(o, Exception)]
    if errors and not result.acks_bad:
        raise errors[0]  # not a wrong ack: the benchmark itself failed
    for j, seen in enumerate(arrivals):
        run = watched[j]
        for seq in range(1, total + 1):
            if seq not in seen:
                result.missing += 1
            else:
                result.delivered += 1
                if seq > warmup:
                    result.latencies.append(seen[seq] - sent[run][seq])
                    result.sent_at.append(sent[run][seq])
                    result.queued.append(seen[seq] - (start + (seq - 1) + run / runs))
    await asyncio.gather(*(ws.close() for ws in [*senders, *sockets]), return_exceptions=True)
    return result


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- the figures --------------------------------------------------------------------------------
def mib(n: float) -> str:
    return f"{n / MIB:,.1f} MiB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _parts(c: Checkpoint) -> str:
    named = {"runs_runevent": "events", "runs_runsnapshot": "snapshots", "runs_flip": "flips"}
    shown = [
        f"{label} {c.storage.parts[table] / c.events:,.0f}"
        for table, label in named.items()
        if table in c.storage.parts
    ]
    return f" ({', '.join(shown)})" if shown else ""


def _checkpoint_text(c: Checkpoint) -> str:
    return (
        f"{c.bytes_per_event():,.0f} bytes/event{_parts(c)}; run page GET {c.page.ms()}; page "
        f"usable (GET + socket snapshot + last {c.window:,} events) p99 {_ms(c.page_ready.p99)}; "
        f"state ?at=random seq {c.state.ms()}; RSS {mib(c.rss)} (peak {mib(c.peak_rss)})"
    )


def figures(bench: Any, figure: Any) -> None:
    """Emit B10 and B11 on ``bench`` (bench.__main__.Bench), as ``figure`` (its Figure)."""
    if not bench.wanted("B10", "B11"):
        return
    p = scale_profile(bench.profile.name)
    engine = "PostgreSQL" if bench.live_database else "SQLite"
    count = -(-max(p.runs, p.baseline_runs) // p.runs_per_token)  # B11's API tokens
    prepared: Site | None = None  # SQLite: one site prepared, each figure on a copy of it
    if bench.live_database is None:
        url = fresh_database(bench.workdir, None, "bench_scale")
        prepared = prepare_site(bench.workdir, url, tokens=count)

    def site_for(name: str) -> tuple[Site, str]:
        url = fresh_database(bench.workdir, bench.live_database, name)
        if prepared is not None:
            return site_copy(prepared, url), url
        return prepare_site(bench.workdir, url, tokens=count), url

    if bench.wanted("B10"):
        site, url = site_for("bench_b10")
        bench.quiet()
        with daphnes(site, 1) as servers:
            long = b10_long_run(site, servers[0], url, p)
        base, last = long.checkpoints[0], long.checkpoints[-1]
        growth = last.rss / base.rss
        segments = ", ".join(
            f"{c.events - c.segment_events:,}→{c.events:,} {c.rate:,.0f} events/s"
            for c in long.checkpoints
        )
        bench.emit(
            figure(
                "B10",
                f"a long run: {last.events:,} events into one run over HTTP (POSTs of "
                f"{p.batch:,} events with seq, back to back), 1 Daphne; storage is {engine} "
                "file growth"
                + (" after a WAL checkpoint" if engine == "SQLite" else " (pg_database_size)"),
                f"at {last.events:,} events: {_checkpoint_text(last)}; RSS {last.events:,}/"
                f"{base.events:,} {growth:.2f}; ingest {segments}; all stored, every state at "
                f"its seq: {long.verified}",
                target="run page p99 ≤ 500 ms, state at any seq p99 ≤ 50 ms, RSS "
                f"{last.events:,}/{base.events:,} ≤ 1.2",
                met=last.page.p99 <= 0.500
                and last.state.p99 <= 0.050
                and growth <= 1.2
                and long.verified,
                baseline=f"the same run at {base.events:,} events: {_checkpoint_text(base)}",
                ratio=f"page GET p99 {last.page.p99 / base.page.p99:.2f}x, state p99 "
                f"{last.state.p99 / base.state.p99:.2f}x, RSS {growth:.2f}x, bytes/event "
                f"{last.bytes_per_event() / base.bytes_per_event():.2f}x",
                setup=bench.tag("in-memory", "1 Daphne"),
                value=last.bytes_per_event(),
            )
        )
    if bench.wanted("B11"):
        site, url = site_for("bench_b11")
        secrets = list(site.tokens)
        bench.quiet()
        measured: dict[int, ManyRuns] = {}
        for runs in (p.baseline_runs, p.runs):
            with daphnes(site, 1) as servers:
                measured[runs] = asyncio.run(
                    b11_many_runs(
                        site,
                        servers[0],
                        secrets,
                        runs=runs,
                        inspectors=p.inspectors,
                        events=int(p.seconds),
                        warmup=p.warmup,
                        runs_per_token=p.runs_per_token,
                    )
                )
        many, few = measured[p.runs], measured[p.baseline_runs]

        def text(m: ManyRuns) -> str:
            lat = m.latency
            return (
                f"{lat.ms().split(' (')[0]} (n={len(m.latencies)}); from the event's scheduled "
                f"time p99 {_ms(percentile(m.queued, 99))}; p50 of the first → last third "
                f"{m.trend()}; frame → ack (committed) p50 {_ms(percentile(m.ack_latencies, 50))},"
                f" p99 {_ms(percentile(m.ack_latencies, 99))}; delivered {m.delivered:,} of "
                f"{m.inspectors * m.total:,} (not arrived when the wait ended: {m.missing}), "
                f"duplicated {m.duplicates}, out of order {m.out_of_order}; acks in order "
                f"{m.acks:,} of {m.runs * m.total:,}, wrong {m.acks_bad}; the wait ended "
                f"{m.drained:.1f} s after the last send ({m.wait_ended}); "
                f"{m.committed_rate:,.0f} events/s committed, {m.runs:,}/s offered; "
                f"RSS {mib(m.rss_start)} with the runs "
                f"started and the sockets open, {mib(m.rss_end)} at the end "
                f"(peak {mib(m.peak_rss)}); "
                f"Daphne CPU {m.server_cpu:.0%} of a core, bench client {m.client_cpu:.0%}; "
                f"{m.late_sends} sends > 50 ms late; set-up {m.setup_seconds:.0f} s"
            )

        bench.emit(
            figure(
                "B11",
                f"many runs: {p.runs:,} runs live at 1 event/s each (each runtime on its own "
                f"/ws/ingest/ socket, {p.runs_per_token} per API token), "
                f"{p.inspectors} inspector sockets spread over them, {p.seconds:.0f} s "
                f"measured after {p.warmup} s, 1 Daphne",
                text(many),
                target="every event to every socket exactly once, p99 event→inspector ≤ 100 ms",
                met=many.exact and few.exact and many.latency.p99 <= 0.100,
                baseline=f"the same with {p.baseline_runs} runs ({p.inspectors} inspectors over "
                f"them): {text(few)}",
                ratio=f"RSS {many.rss_end / few.rss_end:.2f}x, p99 "
                f"{many.latency.p99 / few.latency.p99:.1f}x",
                setup=bench.tag("in-memory", "1 Daphne"),
                value=many.latency.p99,
            )
        )
