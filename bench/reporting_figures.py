"""B11.http, B11.ws, B11.prod, B11.post: runtimes reporting with RunReporter
(bench/reporting.py), four figures.

- B11.http: B11 as runtimes really report: ``runs`` RunReporters in background mode, 100
  inspectors, 1 Daphne, SQLite; baseline the same with 10x fewer runs, same run.
- B11.ws: B11.http with the reporters on the ingest websocket (``transport="websocket"``);
  baseline B11.http's figure, same run.
- B11.prod: the same over the production shape of docs/deploy.md: Debian's nginx (the doc's
  config, devservers/nginx.py) in front of 2 Daphnes, Redis (pubsub layer), PostgreSQL;
  the CPU of every process; baseline B11.http's figure.
- B11.post: the events POST alone, ``runs`` runtimes posting one-event batches back to back,
  with the group commit and without it (bench/ungrouped_asgi.py: rounds of one request, each
  POST its own transaction), 1 Daphne, SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.reporting import Posted, Reported, many_reporters, p, posts_closed_loop
from bench.servers import Site, daphnes, prepare_site, redis_server, site_copy
from devservers.nginx import Nginx
from devservers.postgres import Postgres

RUNS_PER_TOKEN = 100  # API_RATE_LIMIT_PER_MINUTE 60,000 = 1,000 requests/s per token


@dataclass(frozen=True)
class ReportingProfile:
    runs: int  # B11.http and B11.post
    baseline_runs: int
    prod_runs: int
    inspectors: int
    seconds: int  # measured events per run (1 event/s)
    warmup: int
    post_seconds: float


REPORTING_FULL = ReportingProfile(1000, 100, 2000, 100, 30, 5, 20.0)
REPORTING_QUICK = ReportingProfile(20, 5, 20, 5, 1, 1, 0.5)


def tokens_for(runs: int) -> int:
    """The API tokens ``runs`` runs need (prepare_site's ``tokens``)."""
    return math.ceil(runs / RUNS_PER_TOKEN)


def secrets_for(site: Site, runs: int) -> list[str]:
    """One token per run, ``RUNS_PER_TOKEN`` runs on each (the site's ``tokens_for(runs)``)."""
    return [site.tokens[i // RUNS_PER_TOKEN] for i in range(runs)]


def reported_text(m: Reported, *, via: str = "POST") -> str:
    """``via``: what carried a batch, "POST" or "frame" (B11.ws)."""
    return (
        f"{via} → inspector p50 {p(m.server_latencies, 50)}, p99 {p(m.server_latencies, 99)} "
        f"(n={len(m.server_latencies):,}); the reporter's batching (event() → {via} leaves) "
        f"p50 {p(m.batching, 50)}, p99 {p(m.batching, 99)}; event() → inspector p99 "
        f"{p(m.whole_latencies, 99)}; delivered {m.delivered:,} of {m.inspectors * m.total:,} "
        f"(missing {m.missing}), duplicated {m.duplicates}, out of order {m.out_of_order}; "
        f"runs not fully acked at close {m.unacked_runs}, reporter errors "
        f"{m.reporter_errors or 0}; {m.posts:,} {via}s; committed {m.committed_rate:,.0f} "
        f"events/s while sending, {m.offered_rate:,.0f}/s offered; CPU (share of one core) "
        f"{m.cpu_text()}; {m.late_events} event() calls > 50 ms late; set-up "
        f"{m.setup_seconds:.0f} s"
    )


def posted_text(m: Posted) -> str:
    cpu = ", ".join(f"{k} {v:.0%}" for k, v in m.cpu.items())
    first_error = f" ({m.errors[0]})" if m.errors else ""
    return (
        f"{m.rate:,.0f} events/s committed ({m.committed:,} in {m.seconds:.1f} s), POST "
        f"p50 {p(m.latencies, 50)}, p99 {p(m.latencies, 99)}; errors {len(m.errors)}"
        f"{first_error}; CPU {cpu}"
    )


def _met(m: Reported) -> bool:
    return (
        m.exact
        and m.server_latencies != []
        and sorted(m.server_latencies)[math.ceil(0.99 * len(m.server_latencies)) - 1] <= 0.150
        and m.committed_rate >= 0.98 * m.offered_rate
    )


@contextlib.contextmanager
def production(bench: Any, runs: int) -> Iterator[tuple[Site, Nginx, dict[str, int]]]:
    """nginx (docs/deploy.md's config) in front of 2 Daphnes on PostgreSQL and Redis; a site
    with the tokens of ``runs`` runs."""
    postgres = Postgres().start()
    try:
        url = postgres.create_database("bench_b11_prod")
        site = prepare_site(bench.workdir, url, tokens=tokens_for(runs))
        with redis_server(bench.workdir) as redis, daphnes(site, 2, redis_url=redis.url) as two:
            proxy = Nginx(workdir=bench.workdir / "nginx", upstreams=[d.port for d in two])
            proxy.start()
            try:
                assert postgres.process and redis.process and proxy.process
                pids = {
                    "Daphne 1": two[0].process.pid,  # type: ignore[union-attr]
                    "Daphne 2": two[1].process.pid,  # type: ignore[union-attr]
                    "PostgreSQL": postgres.process.pid,
                    "Redis": redis.process.pid,
                    "nginx": proxy.process.pid,
                }
                yield site, proxy, pids
            finally:
                proxy.stop()
    finally:
        postgres.stop()


def figures(bench: Any, figure: Any) -> None:
    """Emit B11.http, B11.prod and B11.post on ``bench`` (bench.__main__.Bench)."""
    if not bench.wanted("B11.http", "B11.ws", "B11.prod", "B11.post"):
        return
    rp = REPORTING_QUICK if bench.profile.name == "quick" else REPORTING_FULL
    shape = (f"{rp.inspectors} inspector sockets spread over them, {rp.seconds} s measured "
             f"after {rp.warmup} s")
    http: dict[int, Reported] = {}
    prepared: Site | None = None  # one prepared site: B11.http, .ws, .post each run on a copy
    if bench.wanted("B11.http", "B11.ws", "B11.post"):
        prepared = prepare_site(
            bench.workdir,
            f"sqlite:///{bench.workdir / 'b11_site.sqlite3'}",
            tokens=tokens_for(max(rp.runs, rp.baseline_runs)),
        )
    if bench.wanted("B11.http"):
        assert prepared is not None
        site = site_copy(prepared, f"sqlite:///{bench.workdir / 'b11_http.sqlite3'}")
        secrets = secrets_for(site, max(rp.runs, rp.baseline_runs))
        for runs in (rp.baseline_runs, rp.runs):
            bench.quiet()
            with daphnes(site, 1) as one:
                server = one[0]
                http[runs] = asyncio.run(many_reporters(
                    base=server.url, ws_base=server.ws_url, session=site.session,
                    secrets=secrets[:runs], runs=runs, inspectors=rp.inspectors,
                    events=rp.seconds, warmup=rp.warmup,
                    pids={"Daphne": server.process.pid},  # type: ignore[union-attr]
                ))
        many, few = http[rp.runs], http[rp.baseline_runs]
        if bench.wanted("B11.http"):
            bench.emit(figure(
                "B11.http",
                f"B11 as runtimes report: {rp.runs:,} runs at 1 event/s, each reported by a "
                f"RunReporter in background mode (HTTP POSTs, {RUNS_PER_TOKEN} runs per API "
                f"token), {shape}, 1 Daphne, SQLite",
                reported_text(many),
                target="every event to every socket exactly once; p99 POST → inspector ≤ "
                "150 ms (the reporter's 0.2 s batching apart); committed rate = offered",
                met=_met(many) and few.exact,
                baseline=f"the same with {rp.baseline_runs:,} runs: {reported_text(few)}",
                ratio=f"p99 {_ratio(many.server_latencies, few.server_latencies)}, Daphne "
                f"CPU {many.cpu['Daphne'] / max(few.cpu['Daphne'], 1e-9):.1f}x",
                setup=bench.tag("in-memory", "1 Daphne"),
                value=_p99(many.server_latencies),
            ))
    if bench.wanted("B11.ws"):
        assert prepared is not None
        site = site_copy(prepared, f"sqlite:///{bench.workdir / 'b11_ws.sqlite3'}")
        secrets = secrets_for(site, rp.runs)
        bench.quiet()
        with daphnes(site, 1) as one:
            server = one[0]
            ws = asyncio.run(many_reporters(
                base=server.url, ws_base=server.ws_url, session=site.session,
                secrets=secrets, runs=rp.runs, inspectors=rp.inspectors, events=rp.seconds,
                warmup=rp.warmup, transport="websocket",
                pids={"Daphne": server.process.pid},  # type: ignore[union-attr]
            ))
        over_http = http.get(rp.runs)
        bench.emit(figure(
            "B11.ws",
            f"B11.http with the reporters on the ingest websocket: {rp.runs:,} runs at 1 "
            f"event/s, each reported by a RunReporter in background mode (transport="
            f"\"websocket\": a batch frame per batch, {RUNS_PER_TOKEN} runs per API token), "
            f"{shape}, 1 Daphne, SQLite",
            reported_text(ws, via="frame"),
            target="every event to every socket exactly once; p99 frame → inspector ≤ "
            "150 ms (the reporter's 0.2 s batching apart); committed rate = offered",
            met=_met(ws),
            baseline=f"B11.http, same run: p99 {p(over_http.server_latencies, 99)}, committed "
            f"{over_http.committed_rate:,.0f} events/s, Daphne {over_http.cpu['Daphne']:.0%}"
            if over_http else "B11.http: its own line",
            ratio=f"committed {ws.committed_rate / max(over_http.committed_rate, 1e-9):.2f}x, "
            f"p99 {_p99(over_http.server_latencies) / max(_p99(ws.server_latencies), 1e-9):.1f}x "
            "lower" if over_http else "",
            setup=bench.tag("in-memory", "1 Daphne"),
            value=_p99(ws.server_latencies),
        ))
    if bench.wanted("B11.prod"):
        bench.quiet()
        with production(bench, rp.prod_runs) as (site, proxy, pids):
            secrets = secrets_for(site, rp.prod_runs)
            prod = asyncio.run(many_reporters(
                base=proxy.url, ws_base=proxy.ws_url, session=site.session, secrets=secrets,
                runs=rp.prod_runs, inspectors=rp.inspectors, events=rp.seconds,
                warmup=rp.warmup, pids=pids,
            ))
        bench.emit(figure(
            "B11.prod",
            f"the production shape (docs/deploy.md): {rp.prod_runs:,} runs reported by "
            f"RunReporters (HTTP) through nginx, {shape} (also through nginx), 2 Daphnes, "
            "Redis, PostgreSQL",
            reported_text(prod),
            target="every event to every socket exactly once; p99 POST → inspector ≤ 150 ms; "
            "committed rate = offered; CPU per process reported",
            met=_met(prod),
            baseline=f"B11.http ({rp.runs:,} runs, 1 Daphne, SQLite, no proxy): "
            + (f"p99 {p(http[rp.runs].server_latencies, 99)}, committed "
               f"{http[rp.runs].committed_rate:,.0f} events/s" if http else "its own line"),
            ratio=f"p99 {_ratio(prod.server_latencies, http[rp.runs].server_latencies)}"
            if http else "",
            setup=bench.tag("redis pubsub", "nginx + 2 Daphnes, PostgreSQL"),
            value=_p99(prod.server_latencies),
        ))
    if bench.wanted("B11.post"):
        assert prepared is not None
        site = site_copy(prepared, f"sqlite:///{bench.workdir / 'b11_post.sqlite3'}")
        secrets = secrets_for(site, rp.runs)
        posted: dict[str, Posted] = {}
        for name, app in (("grouped", "contextadmin.asgi:application"),
                          ("alone", "bench.ungrouped_asgi:application"),
                          ("django", "bench.django_handler_asgi:application")):
            bench.quiet()
            # Closed loop: every POST waits its turn, so load shedding is off (it would turn
            # the wait into 503s and measure the refusals).
            with daphnes(site, 1, application=app,
                         settings={"API_EVENTS_SHED_AFTER_S": "0"}) as one:
                posted[name] = asyncio.run(posts_closed_loop(
                    base=one[0].url, secrets=secrets, clients=rp.runs,
                    seconds=rp.post_seconds,
                    pids={"Daphne": one[0].process.pid},  # type: ignore[union-attr]
                ))
        grouped, alone, django = posted["grouped"], posted["alone"], posted["django"]
        bench.emit(figure(
            "B11.post",
            f"the events POST alone: {rp.runs:,} runtimes (one run each) POST one-event "
            f"batches back to back for {rp.post_seconds:g} s, 1 Daphne, SQLite; with the "
            "group commit",
            posted_text(grouped),
            target="committed events/s with the group commit > without; ratio reported",
            met=grouped.rate > alone.rate and not grouped.errors and not alone.errors,
            baseline="without it (bench/ungrouped_asgi.py: each POST its own transaction): "
            + posted_text(alone) + "; through Django's handler, as before the POST's own ASGI "
            "path (bench/django_handler_asgi.py): " + posted_text(django),
            ratio=(f"{_rate_ratio(grouped, alone)} events/s; own path vs Django's handler "
                   f"{_rate_ratio(grouped, django)}"),
            setup=bench.tag("in-memory", "1 Daphne"),
            value=grouped.rate,
        ))


def _rate_ratio(a: Posted, b: Posted) -> str:
    return f"{a.rate / b.rate:.2f}x" if b.rate else "n/a"


def _p99(values: list[float]) -> float:
    return sorted(values)[math.ceil(0.99 * len(values)) - 1] if values else math.nan


def _ratio(a: list[float], b: list[float]) -> str:
    return f"{_p99(a) / _p99(b):.1f}x" if a and b and _p99(b) else "n/a"
