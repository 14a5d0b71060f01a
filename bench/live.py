"""Live figures on real servers (B1-B4): websocket latency, ingest throughput, fan-out.

Clients are asyncio ``websockets`` connections and a small keep-alive HTTP client, all in this
process; the servers are separate Daphne (or relay) processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect

from bench.http import Http, HttpError
from bench.servers import Site
from devservers.processes import PROJECT, Daphne, free_port, wait_for_port

DEMO_EVENTS: list[dict[str, Any]] = [
    orjson.loads(line)
    for line in (PROJECT / "contextadmin" / "demo" / "run_events.jsonl").read_bytes().splitlines()
    if line.strip()
]
perf = time.perf_counter
SETTLE_S = 0.5  # after opening the sockets, before the first event


def event(seq: int) -> dict[str, Any]:
    """The demo run's events, cycled, numbered from 1 (one flip in every 8 for a fresh run)."""
    return {**DEMO_EVENTS[(seq - 1) % len(DEMO_EVENTS)], "seq": seq}


# -- servers and clients ----------------------------------------------------------------------
class Relay:
    """The bare ``websockets`` relay process (bench/relay.py)."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def __enter__(self) -> Relay:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.relay", str(self.port)],
            cwd=PROJECT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, process=self.process)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


async def ws_connect(url: str, headers: dict[str, str] | None = None) -> ClientConnection:
    return await connect(
        url, additional_headers=headers, compression=None, max_size=None, open_timeout=30
    )


async def start_run(server: Daphne, site: Site) -> str:
    http = Http("127.0.0.1", server.port, token=site.token)
    try:
        body = await http.post_json(
            "/api/runs/", {"workflow": "Generator", "enterprise_id": "bench"}
        )
    finally:
        await http.close()
    return str(body["run_id"])


async def open_inspector(server: Daphne, site: Site, run_id: str) -> ClientConnection:
    ws = await ws_connect(
        f"{server.ws_url}/ws/runs/{run_id}/",
        {"Origin": server.url, "Cookie": f"sessionid={site.session}"},
    )
    first = orjson.loads(await asyncio.wait_for(ws.recv(), 30))
    if first.get("type") != "snapshot":
        raise RuntimeError(f"inspector: expected a snapshot first, got {first!r}")
    return ws


# -- paced latency (B1, B3) -------------------------------------------------------------------
@dataclass
class Delivery:
    """One paced repetition: latencies of every (socket, event), and what went wrong."""

    latencies: list[float] = field(default_factory=list)  # from just before the send
    queued: list[float] = field(default_factory=list)  # from the event's scheduled time
    missing: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    events: int = 0
    sockets: int = 0
    sends: int = 0  # requests (or frames) that carried the events
    most_per_send: int = 0

    @property
    def exact(self) -> bool:
        return not (self.missing or self.duplicates or self.out_of_order)


async def event_arrivals_watch(
    ws: ClientConnection, seen: dict[int, float], *, total: int, result: Any
) -> None:
    """Record when each ``{"type": "event", "seq"}`` arrives on one inspector socket, until
    ``total`` distinct seqs came or the socket closed; count ``result.duplicates`` and
    ``result.out_of_order`` (every figure that checks exactly-once delivery reads these)."""
    last = 0
    async for raw in ws:
        now = perf()
        message = orjson.loads(raw)
        if message.get("type") != "event":
            continue
        seq = message["seq"]
        if seq in seen:
            result.duplicates += 1
            continue
        if seq != last + 1:
            result.out_of_order += 1
        last = seq
        seen[seq] = now
        if len(seen) == total:
            return


async def paced(
    send: Callable[[list[int]], Awaitable[list[int]]],
    sockets: Sequence[ClientConnection],
    *,
    events: int,
    warmup: int,
    rate: float,
    drain_timeout: float = 15.0,
) -> Delivery:
    """A runtime produces events 1..warmup+events at ``rate``/s on an absolute schedule and
    reports them one send at a time, as a runtime with a queue does: each send carries every
    event produced since the last one began (one, while answers come within 1/rate). Each event
    is timed from just before the send that carried it (and from its scheduled time: with the
    wait in the queue) to its arrival as ``{"type": "event", "seq"}`` on every socket.
    ``send(indices)`` returns the seqs the events got."""
    total = warmup + events
    arrivals: list[dict[int, float]] = [{} for _ in sockets]
    result = Delivery(events=events, sockets=len(sockets))
    complete = asyncio.Event()
    finished = [0]

    async def watch(ws: ClientConnection, seen: dict[int, float]) -> None:
        await event_arrivals_watch(ws, seen, total=total, result=result)
        if len(seen) == total:
            finished[0] += 1
            if finished[0] == len(sockets):
                complete.set()

    watchers = [
        asyncio.create_task(watch(ws, seen)) for ws, seen in zip(sockets, arrivals, strict=True)
    ]
    start = perf() + 0.02
    scheduled = {index: start + (index - 1) / rate for index in range(1, total + 1)}
    sent: dict[int, float] = {}
    produced_at: dict[int, float] = {}
    pending: list[int] = []
    ready = asyncio.Event()

    async def produce() -> None:
        for index in range(1, total + 1):
            delay = scheduled[index] - perf()
            if delay > 0:
                await asyncio.sleep(delay)
            pending.append(index)
            ready.set()

    producer = asyncio.create_task(produce())
    done = 0
    while done < total:
        await ready.wait()
        batch, pending[:] = list(pending), []
        ready.clear()
        began = perf()
        seqs = await send(batch)
        for index, seq in zip(batch, seqs, strict=True):
            sent[seq], produced_at[seq] = began, scheduled[index]
        done += len(batch)
        result.sends += 1
        result.most_per_send = max(result.most_per_send, len(batch))
    await producer
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(complete.wait(), drain_timeout)
    for task in watchers:
        task.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    for seen in arrivals:
        for seq in range(warmup + 1, total + 1):
            if seq in seen:
                result.latencies.append(seen[seq] - sent[seq])
                result.queued.append(seen[seq] - produced_at[seq])
            else:
                result.missing += 1
    return result


class HttpPool:
    """Keep-alive connections for concurrent requests: one request per connection at a time."""

    def __init__(self, port: int, token: str | None) -> None:
        self.port = port
        self.token = token
        self.idle: list[Http] = []
        self.all: list[Http] = []

    async def post(self, path: str, body: bytes) -> bytes:
        http = self.idle.pop() if self.idle else None
        if http is None:
            http = Http("127.0.0.1", self.port, token=self.token)
            self.all.append(http)
        try:
            return await http.request("POST", path, body)
        finally:
            self.idle.append(http)

    async def close(self) -> None:
        await asyncio.gather(*(http.close() for http in self.all))


async def product_latency(
    site: Site,
    post_to: Daphne,
    watch_on: Sequence[Daphne],
    *,
    sockets: int,
    events: int,
    warmup: int,
    rate: float,
) -> Delivery:
    """A runtime POSTs its events (one per request while answers keep up); inspectors, spread
    over ``watch_on``, get them."""
    run_id = await start_run(post_to, site)
    servers = list(itertools.islice(itertools.cycle(watch_on), sockets))
    inspectors = await asyncio.gather(*(open_inspector(s, site, run_id) for s in servers))
    await asyncio.sleep(SETTLE_S)  # the sockets' snapshot reads are done: measure steady state
    http = Http("127.0.0.1", post_to.port, token=site.token)
    path = f"/api/runs/{run_id}/events/"

    async def send(indices: list[int]) -> list[int]:
        body = orjson.dumps({"events": [event(index) for index in indices]})
        return [
            int(ack["seq"]) for ack in orjson.loads(await http.request("POST", path, body))["acks"]
        ]

    try:
        return await paced(send, inspectors, events=events, warmup=warmup, rate=rate)
    finally:
        await http.close()
        await asyncio.gather(*(ws.close() for ws in inspectors))


async def product_latency_ws(
    site: Site, ingest_on: Daphne, watch_on: Daphne, *, events: int, warmup: int, rate: float
) -> Delivery:
    """As ``product_latency``, but the runtime sends each event over /ws/ingest/."""
    run_id = await start_run(ingest_on, site)
    inspector = await open_inspector(watch_on, site, run_id)
    ingest = await ws_connect(
        f"{ingest_on.ws_url}/ws/ingest/{run_id}/", {"Authorization": f"Bearer {site.token}"}
    )

    async def drain_acks() -> None:
        async for _ in ingest:
            pass

    acks = asyncio.create_task(drain_acks())

    async def send(indices: list[int]) -> list[int]:
        for index in indices:  # one frame per event, never waiting for acks
            await ingest.send(orjson.dumps(event(index)).decode())
        return indices

    try:
        return await paced(send, [inspector], events=events, warmup=warmup, rate=rate)
    finally:
        acks.cancel()
        await ingest.close()
        await inspector.close()


async def unauthorized_floor(
    server: Daphne, *, requests: int, rate: float, concurrency: int
) -> list[float]:
    """What bounds B1 over HTTP: the same POST, answered 401 before any database access
    (Daphne, Django's request handling, middleware and the view): everything a real ingest
    request pays before its first query. Paced like B1."""
    pool = HttpPool(server.port, None)
    body = orjson.dumps({"events": [event(1)]})
    times: list[float] = []
    slots = asyncio.Semaphore(concurrency)

    async def one() -> None:
        began = perf()
        try:
            await pool.post("/api/runs/floor/events/", body)
        except HttpError as exc:
            if exc.status != 401:
                raise
        finally:
            slots.release()
        times.append(perf() - began)

    tasks = []
    start = perf() + 0.02
    try:
        for index in range(requests):
            delay = start + index / rate - perf()
            if delay > 0:
                await asyncio.sleep(delay)
            await slots.acquire()
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    finally:
        await pool.close()
    return times


async def relay_latency(
    relay: Relay, *, sockets: int, events: int, warmup: int, rate: float
) -> Delivery:
    """The baseline: the same messages through the bare websockets relay."""
    consumers = [await ws_connect(f"{relay.ws_url}/consume") for _ in range(sockets)]
    producer = await ws_connect(f"{relay.ws_url}/produce")
    await asyncio.sleep(SETTLE_S)  # let the relay register the consumers

    async def send(indices: list[int]) -> list[int]:
        for seq in indices:
            message = {"type": "event", "seq": seq, "event": event(seq), "flips": [], "changes": {}}
            await producer.send(orjson.dumps(message).decode())
        return indices

    try:
        return await paced(send, consumers, events=events, warmup=warmup, rate=rate)
    finally:
        await producer.close()
        await asyncio.gather(*(ws.close() for ws in consumers))


# -- sustained ingest (B2) --------------------------------------------------------------------
@dataclass
class Ingest:
    events: int
    seconds: float
    verified: bool

    @property
    def rate(self) -> float:
        return self.events / self.seconds


async def ingest_http(
    site: Site, servers: Sequence[Daphne], *, streams: int, events: int, batch: int
) -> Ingest:
    """``streams`` runtimes, each its own run, POST batches of ``batch`` events back to back."""
    targets = list(itertools.islice(itertools.cycle(servers), streams))
    runs = [await start_run(server, site) for server in targets]
    per_stream = events // streams
    bodies = [
        [
            orjson.dumps({"events": [event(s) for s in range(first, first + batch)]})
            for first in range(1, per_stream + 1, batch)
        ]
        for _ in runs
    ]
    last: list[int] = [0] * streams

    async def stream(index: int) -> None:
        http = Http("127.0.0.1", targets[index].port, token=site.token)
        path = f"/api/runs/{runs[index]}/events/"
        try:
            for body in bodies[index]:
                reply = orjson.loads(await http.request("POST", path, body))
                last[index] = reply["last_seq"]
        finally:
            await http.close()

    began = perf()
    await asyncio.gather(*(stream(i) for i in range(streams)))
    elapsed = perf() - began
    return Ingest(per_stream * streams, elapsed, all(seq == per_stream for seq in last))


async def ingest_ws(
    site: Site, servers: Sequence[Daphne], *, streams: int, events: int, window: int
) -> Ingest:
    """``streams`` runtimes send one event per websocket message, ``window`` unacked at most."""
    targets = list(itertools.islice(itertools.cycle(servers), streams))
    runs = [await start_run(server, site) for server in targets]
    per_stream = events // streams
    frames = [orjson.dumps(event(seq)).decode() for seq in range(1, per_stream + 1)]
    ok = [False] * streams

    async def stream(index: int) -> None:
        ws = await ws_connect(
            f"{targets[index].ws_url}/ws/ingest/{runs[index]}/",
            {"Authorization": f"Bearer {site.token}"},
        )
        credit = asyncio.Semaphore(window)
        expected = 1

        async def acks() -> None:
            nonlocal expected
            while expected <= per_stream:
                message = orjson.loads(await ws.recv())
                if message.get("type") != "ack" or message["seq"] != expected:
                    raise RuntimeError(f"ingest ws: expected ack {expected}, got {message!r}")
                expected += 1
                credit.release()

        reader = asyncio.create_task(acks())
        try:
            for frame in frames:
                await credit.acquire()
                await ws.send(frame)
            await reader
            ok[index] = expected == per_stream + 1
        finally:
            reader.cancel()
            await ws.close()

    began = perf()
    await asyncio.gather(*(stream(i) for i in range(streams)))
    elapsed = perf() - began
    return Ingest(per_stream * streams, elapsed, all(ok))
