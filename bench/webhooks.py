"""B13: webhooks beside ingest, on real servers: one Daphne, one ``manage.py db_worker``, and
a receiver in this process that checks every signature with ``standardwebhooks``.

- B13.ingest: B2.http's ingest with 10 active subscriptions (every event) against none,
  repetitions interleaved in one run (subscriptions switched on and off between them).
- B13.latency: commit to receiver, the worker running: one hand-off event per POST, paced;
  measured from the POST's start (an upper bound on commit -> arrival).
- B13.outage: the receiver down for a while, then back: every delivery arrives, none with a new
  webhook-id, in order per run. The issue's 10 minutes are scaled down (OUTAGE_S) with the
  worker's backoff (WEBHOOKS_BACKOFF_BASE_S) scaled down with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from standardwebhooks import Webhook, WebhookVerificationError

from bench import live
from bench.http import Http
from bench.servers import Site, daphnes, prepare_site
from bench.stats import Latency, Rates
from devservers.processes import PROJECT, Daphne, free_port, manage

SUBSCRIPTIONS = 10
WORKER_ENV = {"WEBHOOKS_ALLOW_HTTP": "1", "WEBHOOKS_ALLOW_PRIVATE": "1"}
HANDOFF = {"type": "handoff", "agent": "InterviewAgent", "target": "ContextVariablesAgent"}
CACHE_S = 1.2  # Daphne sees a subscription change within 1 s (SUBSCRIPTIONS_CACHE_S)


@dataclass(frozen=True)
class B13Profile:
    reps: int  # B13.ingest repetitions of each side
    latency_events: int
    rate: float  # B13.latency events/s
    outage_s: float
    outage_runs: int
    backoff_s: float


PROFILES = {
    "full": B13Profile(5, 300, 10.0, 60.0, 5, 1.0),
    "quick": B13Profile(1, 10, 20.0, 3.0, 2, 0.2),
}


@dataclass
class Arrival:
    at: float
    message_id: str
    payload: Any
    verified: bool


@dataclass
class Receiver:
    """A loopback HTTP receiver that records and verifies; ``up`` False refuses connections."""

    port: int = field(default_factory=free_port)
    secrets: list[str] = field(default_factory=list)
    arrivals: list[Arrival] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    def _verified(self, body: bytes, headers: dict[str, str]) -> bool:
        for secret in self.secrets:
            with contextlib.suppress(WebhookVerificationError):
                Webhook(secret).verify(body, headers)
                return True
        return False

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.arrivals.append(
                    Arrival(
                        time.perf_counter(),
                        headers.get("webhook-id", ""),
                        orjson.loads(body),
                        receiver._verified(body, headers),
                    )
                )
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


@contextlib.contextmanager
def worker(site: Site, **extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """One ``manage.py db_worker`` on the site's database, as scripts/run starts it."""
    env = {**site.env(), **WORKER_ENV, **extra}
    log = open(site.workdir / "db_worker.log", "ab")  # noqa: SIM115 (handed to the child)
    process = subprocess.Popen(
        [sys.executable, str(PROJECT / "manage.py"), "db_worker", "--no-reload",
         "--no-startup-delay", "--interval", "0.1", "--queue-name", "*"],
        env=env, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# One Django process answers the figures' set-up and checks (a process costs ~1.3 s to start):
# it runs each block of code it reads (a JSON line) and answers what the block printed.
SHELL_LOOP = """
import contextlib, io, json, sys, traceback
for line in sys.stdin:
    out, error = io.StringIO(), None
    try:
        with contextlib.redirect_stdout(out):
            exec(json.loads(line), {})
    except Exception:
        error = traceback.format_exc()
    sys.__stdout__.write(json.dumps({"out": out.getvalue(), "error": error}) + "\\n")
    sys.__stdout__.flush()
"""
_shells: dict[str, subprocess.Popen[str]] = {}  # site's database -> its django_shell


@contextlib.contextmanager
def django_shell(site: Site) -> Iterator[None]:
    """While open, ``_django`` on this site runs its code in one ``manage.py shell``."""
    process = subprocess.Popen(
        [sys.executable, str(PROJECT / "manage.py"), "shell", "--no-imports", "-c", SHELL_LOOP],
        env={**site.env(), **WORKER_ENV},
        cwd=PROJECT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    _shells[site.database_url] = process
    try:
        yield
    finally:
        del _shells[site.database_url]
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=15)


def _django(site: Site, code: str) -> str:
    """Run ``code`` in Django on the site's database; what it printed."""
    process = _shells.get(site.database_url)
    if process is None:
        return manage({**site.env(), **WORKER_ENV}, "shell", "-c", code).stdout.strip()
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(orjson.dumps(code).decode() + "\n")
    process.stdin.flush()
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"django_shell exited with {process.wait(timeout=15)}")
    answer = orjson.loads(line)
    if answer["error"]:
        raise RuntimeError(f"django_shell: {answer['error']}")
    return str(answer["out"]).strip()


def subscribe(site: Site, receiver: Receiver, count: int, events: str) -> None:
    """Add ``count`` subscriptions to the receiver (their secrets go to the receiver), in one
    Django process: ``webhook_add``'s service, not one command start per subscription."""
    url = f"http://127.0.0.1:{receiver.port}/hook"
    code = (
        "import json; from runs.webhooks.services.subscriptions import subscription_create; "
        f"print(json.dumps([subscription_create(url={url!r}, events={events!r})[1] "
        f"for _ in range({count})]))"
    )
    receiver.secrets.extend(orjson.loads(_django(site, code).splitlines()[-1]))


def subscriptions_switch(site: Site, *, enabled: bool) -> None:
    _django(site, "from runs.webhooks.models import Subscription as S; "
                  f"S.objects.update(enabled={enabled})")
    time.sleep(CACHE_S)


def outbox(site: Site) -> list[dict[str, Any]]:
    code = ("import json; from runs.webhooks.models import Delivery as D; print(json.dumps("
            "list(D.objects.order_by('pk').values('message_id', 'status', 'lane', 'event'))))")
    rows: list[dict[str, Any]] = orjson.loads(_django(site, code).splitlines()[-1])
    return rows


def outbox_clear(site: Site) -> None:
    _django(site, "from runs.webhooks.models import Delivery, Subscription; "
                  "Delivery.objects.all().delete(); Subscription.objects.all().delete()")


# -- the figures -----------------------------------------------------------------------------
def b13_ingest(site: Site, server: Daphne, p: B13Profile, events: int) -> dict[str, Rates]:
    """B2.http's ingest, repetitions alternating between no subscription and SUBSCRIPTIONS."""
    rates: dict[str, list[float]] = {"none": [], "subscribed": []}
    for _ in range(p.reps):
        for side in ("none", "subscribed"):
            subscriptions_switch(site, enabled=side == "subscribed")
            done = asyncio.run(
                live.ingest_http(site, [server], streams=1, events=events, batch=100)
            )
            assert done.verified
            rates[side].append(done.rate)
    return {side: Rates(tuple(values)) for side, values in rates.items()}


async def _paced_handoffs(site: Site, server: Daphne, count: int, rate: float) -> list[float]:
    run_id = await live.start_run(server, site)
    http = Http("127.0.0.1", server.port, token=site.token)
    sent: list[float] = []
    try:
        for seq in range(1, count + 1):
            began = time.perf_counter()
            sent.append(began)
            body = orjson.dumps({"events": [{**HANDOFF, "seq": seq}]})
            await http.request("POST", f"/api/runs/{run_id}/events/", body)
            await asyncio.sleep(max(0.0, 1 / rate - (time.perf_counter() - began)))
    finally:
        await http.close()
    return sent


def b13_latency(site: Site, server: Daphne, receiver: Receiver, p: B13Profile) -> Latency:
    """Commit -> receiver for paced hand-offs, one subscription, the worker running."""
    first = len(receiver.arrivals)
    sent = asyncio.run(_paced_handoffs(site, server, p.latency_events, p.rate))

    def handoffs() -> dict[int, float]:
        arrivals = receiver.arrivals[first:]
        return {a.payload["data"]["seq"]: a.at for a in arrivals if a.payload["type"] == "handoff"}

    deadline = time.monotonic() + 30
    while len(handoffs()) < len(sent) and time.monotonic() < deadline:
        time.sleep(0.05)
    by_seq = handoffs()
    return Latency.of([[by_seq[seq] - sent[seq - 1] for seq in sorted(by_seq)]])


@dataclass
class Outage:
    stored: int
    arrived: int
    new_ids: int
    duplicates: int
    in_order: bool
    verified: bool
    recovery_s: float


def b13_outage(site: Site, server: Daphne, receiver: Receiver, p: B13Profile) -> Outage:
    """Runs reported while the receiver is down; then it comes back."""
    receiver.stop()
    began = time.monotonic()
    runs: list[str] = []
    events = [*live.DEMO_EVENTS[:6], HANDOFF, {"type": "run_status", "status": "completed"}]

    async def report() -> None:
        for _ in range(p.outage_runs):
            run_id = await live.start_run(server, site)
            runs.append(run_id)
            http = Http("127.0.0.1", server.port, token=site.token)
            try:
                await http.request("POST", f"/api/runs/{run_id}/events/",
                                   orjson.dumps({"events": events}))
            finally:
                await http.close()

    asyncio.run(report())
    stored = [row for row in outbox(site) if row["lane"] in runs]
    time.sleep(max(0.0, p.outage_s - (time.monotonic() - began)))
    receiver.arrivals.clear()
    back = time.monotonic()
    receiver.start()
    deadline = back + max(120.0, p.outage_s * 2)
    while len(receiver.arrivals) < len(stored) and time.monotonic() < deadline:
        time.sleep(0.05)
    recovery = time.monotonic() - back
    time.sleep(1.0)  # any late duplicate
    ids = [a.message_id for a in receiver.arrivals]
    stored_ids = {row["message_id"] for row in stored}
    order_ok = all(
        [a.payload["type"] for a in receiver.arrivals if a.payload["data"].get("run_id") == run]
        == [row["event"] for row in stored if row["lane"] == run]
        for run in runs
    )
    return Outage(
        stored=len(stored),
        arrived=len(set(ids) & stored_ids),
        new_ids=len(set(ids) - stored_ids),
        duplicates=len(ids) - len(set(ids)),
        in_order=order_ok,
        verified=all(a.verified for a in receiver.arrivals),
        recovery_s=recovery,
    )


def figures(bench: Any, figure: Any) -> None:
    """Emit B13.ingest, B13.latency, B13.outage on ``bench`` (bench.__main__.Bench)."""
    if not bench.wanted("B13.ingest", "B13.latency", "B13.outage"):
        return
    p = PROFILES[bench.profile.name]
    site = prepare_site(bench.workdir, None)
    receiver = Receiver().start()
    tag = bench.tag("in-memory", "1 Daphne, 1 db_worker (--interval 0.1)")
    try:
        with (
            daphnes(site, 1) as servers,
            worker(site, WEBHOOKS_BACKOFF_BASE_S=str(p.backoff_s), WEBHOOKS_TICK_S="1"),
            django_shell(site),
        ):
            server = servers[0]
            subscribe(site, receiver, SUBSCRIPTIONS, "flag_flipped,handoff,run_started,"
                      "run_ended,warning,run_stale")
            if bench.wanted("B13.ingest"):
                bench.quiet()
                rates = b13_ingest(site, server, p, bench.profile.http_events)
                share = rates["subscribed"].median / rates["none"].median
                delivered = len(outbox(site))
                bench.emit(figure(
                    "B13.ingest",
                    f"B2.http's ingest (batches of 100, {bench.profile.http_events:,} events/rep, "
                    f"reps interleaved) with {SUBSCRIPTIONS} active subscriptions (all events)",
                    f"{rates['subscribed'].text()}; {delivered} deliveries written",
                    "≥ 90 % of the no-subscription rate",
                    share >= 0.90,
                    baseline=f"no subscription: {rates['none'].text()}",
                    ratio=f"{share:.1%} of the no-subscription rate",
                    setup=tag,
                    value=rates["subscribed"].median,
                ))
            outbox_clear(site)
            receiver.secrets.clear()
            subscribe(site, receiver, 1, "handoff,flag_flipped,run_started,run_ended")
            time.sleep(CACHE_S)
            if bench.wanted("B13.latency"):
                bench.quiet()
                lat = b13_latency(site, server, receiver, p)
                bench.emit(figure(
                    "B13.latency",
                    f"commit -> receiver, worker running: {p.latency_events} hand-offs at "
                    f"{p.rate:.0f}/s, one per POST, timed from the POST's start",
                    lat.ms(),
                    "p50 ≤ 200 ms, p99 ≤ 1 s",
                    lat.p50 <= 0.200 and lat.p99 <= 1.0,
                    setup=tag,
                    value=lat.p50,
                ))
            if bench.wanted("B13.outage"):
                bench.quiet()
                out = b13_outage(site, server, receiver, p)
                ok = (out.arrived == out.stored and not out.new_ids and not out.duplicates
                      and out.in_order and out.verified)
                bench.emit(figure(
                    "B13.outage",
                    f"a receiver down {p.outage_s:.0f} s (the issue's 10 min scaled down, "
                    f"backoff base {p.backoff_s} s), {p.outage_runs} runs of 4 events reported "
                    "meanwhile, then back",
                    f"{out.arrived}/{out.stored} delivered {out.recovery_s:.1f} s after it came "
                    f"back; new ids {out.new_ids}, duplicates {out.duplicates}, in order per run "
                    f"{out.in_order}, all signatures verified {out.verified}",
                    "every delivery arrives; none with a new id; order kept per run",
                    ok,
                    setup=tag,
                    value=out.recovery_s,
                ))
    finally:
        receiver.stop()
