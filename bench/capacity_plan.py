"""The capacity plan of docs/deploy.md from measured per-core figures, and a simulation of the
group commit where a real run is impossible here (10,000 and 100,000 runs need more cores
than this machine has).

``python -m bench.capacity_plan [var/capacity.json] [--daphne-http-per-core N] ...`` prints
the plan; ``bench.capacity`` measures the PostgreSQL and Redis inputs and calls it too.

The simulation: P Daphne processes each take a Poisson share of the events (1 event/s per
run) and group-commit what queued while their previous round ran (runs/batching.py), at
most 2,000 events a round. A round costs PostgreSQL ``a + b·k`` core-seconds for ``k``
batches (measured) and the committing Daphne ``c·k`` (measured); the database's C cores are
shared equally by the rounds in flight (processor sharing). It reports the database's
utilisation, the mean round and the commit wait (an event's arrival at its Daphne → its
round committed) at p50/p99. Not modelled: disk (WAL fsync: the group commit makes it one
flush a round per process), locks (each round locks different runs' rows), the network.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

ROUND_MAX = 2_000  # runs.batching.GROUP_COMMIT_MAX_EVENTS
STEP_S = 0.001
DAPHNE_TARGET_UTILISATION = 0.6  # leave room for bursts, reconnect storms, inspectors
COMMIT_WAIT_P99_S = 0.050  # a third of the 150 ms event -> inspector budget


@dataclass(frozen=True)
class Inputs:
    http_per_core: float  # events/s one Daphne core takes over HTTP (one event per POST)
    ws_per_core: float  # events/s one Daphne core takes over /ws/ingest/
    round_fixed_s: float  # PostgreSQL core-s per round (the commit)
    per_batch_s: float  # PostgreSQL core-s per batch in a round (insert, run row update)
    python_per_event_s: float  # the committing Daphne's CPU per event of a round
    redis_deliveries_per_core: float  # redis-server: PUBLISH deliveries per core-second
    redis_publishes_per_core: float  # redis-server: PUBLISHes (1 subscriber) per core-second
    prune_events_per_s: float  # runs_prune on one session
    prune_events_per_pg_core_s: float


@dataclass(frozen=True)
class Simulated:
    runs: int
    daphnes: int
    db_cores: int
    db_utilisation: float
    mean_round: float
    p50_s: float
    p99_s: float
    stable: bool  # the queues at the end no longer than half-way through


def simulate(
    *, runs: int, daphnes: int, db_cores: int, inputs: Inputs, seconds: float = 6.0, seed: int = 1
) -> Simulated:
    rng = random.Random(seed)
    rate = runs / daphnes  # events/s per process
    queues: list[list[tuple[float, int]]] = [[] for _ in range(daphnes)]
    rounds: list[tuple[float, float, list[tuple[float, int]]] | None] = [None] * daphnes
    waits: dict[float, int] = {}
    work_done = 0.0
    sizes: list[int] = []
    now = 0.0
    steps = int(seconds / STEP_S)
    backlog_mid = 0
    for step in range(steps):
        now += STEP_S
        if step == steps // 2:
            backlog_mid = sum(count for q in queues for _, count in q)
        for d in range(daphnes):  # arrivals this step (Poisson, as counts)
            count = _poisson(rng, rate * STEP_S)
            if count:
                queues[d].append((now, count))
        active = [d for d in range(daphnes) if rounds[d] is not None]
        share = min(1.0, db_cores / len(active)) if active else 0.0
        for d in active:
            left, python, items = rounds[d]  # type: ignore[misc]
            progress = STEP_S * share
            work_done += max(0.0, min(progress, left))
            left -= progress
            if left <= 0:
                python -= STEP_S
            if left <= 0 and python <= 0:
                for arrived, count in items:
                    key = round(now - arrived, 3)
                    waits[key] = waits.get(key, 0) + count
                rounds[d] = None
            else:
                rounds[d] = (left, python, items)
        for d in range(daphnes):
            if rounds[d] is None and queues[d]:
                taken, items, rest = 0, [], []
                for arrived, count in queues[d]:
                    if taken + count <= ROUND_MAX or not items:
                        items.append((arrived, count))
                        taken += count
                    else:
                        rest.append((arrived, count))
                queues[d] = rest
                sizes.append(taken)
                db = inputs.round_fixed_s + inputs.per_batch_s * taken
                rounds[d] = (db, inputs.python_per_event_s * taken, items)
    backlog = sum(count for q in queues for _, count in q)
    return Simulated(
        runs,
        daphnes,
        db_cores,
        work_done / (seconds * db_cores),
        sum(sizes) / len(sizes) if sizes else 0.0,
        _weighted_percentile(waits, 50),
        _weighted_percentile(waits, 99),
        backlog <= backlog_mid + runs * 0.1,  # not growing (100 ms of arrivals of noise)
    )


def _poisson(rng: random.Random, mean: float) -> int:
    if mean > 30:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, product, count = math.exp(-mean), rng.random(), 0
    while product > limit:
        product *= rng.random()
        count += 1
    return count


def _weighted_percentile(weights: dict[float, int], q: float) -> float:
    total = sum(weights.values())
    if not total:
        return math.nan
    rank, seen = q / 100 * total, 0
    for value in sorted(weights):
        seen += weights[value]
        if seen >= rank:
            return value
    return max(weights)


def daphnes_needed(runs: int, per_core: float) -> int:
    return math.ceil(runs / (per_core * DAPHNE_TARGET_UTILISATION))


def plan(inputs: Inputs, *, runs_options: tuple[int, ...] = (10_000, 100_000),
         watched: float = 0.1, seconds: float = 6.0) -> list[str]:
    """Lines of the plan: per size, Daphnes (HTTP and ws), database cores (the smallest C the
    simulation keeps stable with a commit wait p99 ≤ 50 ms), Redis, retention.

    The database shows ~90% busy at any size: each process commits whenever its previous
    round is done, so rounds shrink as cores are added and the fixed cost of a round (the
    commit) takes up what the cores free. The commit wait is what tells enough from too few."""
    lines = []
    for runs in runs_options:
        http = daphnes_needed(runs, inputs.http_per_core)
        ws = daphnes_needed(runs, inputs.ws_per_core)
        chosen: Simulated | None = None
        tried = []
        for cores in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64):
            result = simulate(runs=runs, daphnes=http, db_cores=cores, inputs=inputs,
                              seconds=seconds)
            tried.append(result)
            if result.stable and result.p99_s <= COMMIT_WAIT_P99_S:
                chosen = result
                break
        publishes = runs  # channels_redis pubsub: one PUBLISH per broadcast, watched or not
        deliveries = runs * watched  # to the process holding each watched run's inspector
        redis_core = publishes / inputs.redis_publishes_per_core + (
            deliveries / inputs.redis_deliveries_per_core
        )
        prune_cores = runs / inputs.prune_events_per_pg_core_s
        lines.append(f"{runs:,} runs at 1 event/s ({runs:,} events/s, {watched:.0%} watched):")
        lines.append(f"  Daphne processes (one core each, {DAPHNE_TARGET_UTILISATION:.0%} busy): "
                     f"{http} over HTTP (RunReporter), {ws} over /ws/ingest/")
        for r in tried:
            lines.append(
                f"  simulated: {r.daphnes} Daphnes, {r.db_cores} PostgreSQL cores: database "
                f"{r.db_utilisation:.0%} busy, mean round {r.mean_round:,.0f} batches, commit "
                f"wait p50 {r.p50_s * 1e3:.0f} ms, p99 {r.p99_s * 1e3:.0f} ms, "
                f"{'stable' if r.stable else 'FALLING BEHIND'}"
            )
        lines.append(
            f"  PostgreSQL cores for ingest (commit wait p99 ≤ {COMMIT_WAIT_P99_S * 1e3:.0f} ms): "
            f"{chosen.db_cores if chosen else '> 64'}"
        )
        lines.append(f"  Redis: {redis_core:.2f} cores of redis-server (one node is one core): "
                     f"{math.ceil(redis_core / 0.5)} node(s) at ≤ 50% busy")
        lines.append(
            f"  retention (prune_runs deleting a day's {runs * 86_400:,} events a day): "
            f"{prune_cores:.2f} PostgreSQL cores around the clock; one session deletes "
            f"{inputs.prune_events_per_s:,.0f} events/s = "
            f"{runs / inputs.prune_events_per_s:.2f} sessions busy all day"
        )
    return lines


def inputs_from(figures: dict, *, http_per_core: float, ws_per_core: float) -> Inputs:
    pg, redis = figures["postgres"], figures["redis"]
    return Inputs(
        http_per_core=http_per_core,
        ws_per_core=ws_per_core,
        round_fixed_s=pg["postgres_round_fixed_s"],
        per_batch_s=pg["postgres_per_batch_s"],
        python_per_event_s=pg["python_commit_per_event_s"],
        redis_deliveries_per_core=redis["4"]["deliveries_per_core_s"]
        if "4" in redis else redis[4]["deliveries_per_core_s"],
        redis_publishes_per_core=redis["1"]["publishes_per_core_s"]
        if "1" in redis else redis[1]["publishes_per_core_s"],
        prune_events_per_s=pg["prune"]["events_per_s"],
        prune_events_per_pg_core_s=pg["prune"]["events_per_postgres_core_s"],
    )


# Daphne's per-core rates: from docs/benchmarks.md (B11.http/B11.post over HTTP, B11 over
# the socket); pass the newest with the options below.
HTTP_PER_CORE = 840.0
WS_PER_CORE = 970.0


def plan_text(figures: dict, *, http_per_core: float = HTTP_PER_CORE,
              ws_per_core: float = WS_PER_CORE, seconds: float = 6.0) -> str:
    """The inputs, then the plan; ``seconds``: simulated per case (the quick run's are short,
    the simulation being most of its time)."""
    inputs = inputs_from(figures, http_per_core=http_per_core, ws_per_core=ws_per_core)
    head = [
        f"inputs: Daphne {inputs.http_per_core:,.0f} events/s per core over HTTP, "
        f"{inputs.ws_per_core:,.0f} over the socket; PostgreSQL a round "
        f"{inputs.round_fixed_s * 1e3:.2f} ms + {inputs.per_batch_s * 1e3:.3f} ms per batch "
        f"of core time ({1 / inputs.per_batch_s:,.0f} inserts/s per core in rounds of 100); "
        f"the committing Daphne {inputs.python_per_event_s * 1e6:.0f} µs per event; Redis "
        f"{inputs.redis_publishes_per_core:,.0f} PUBLISHes/s, "
        f"{inputs.redis_deliveries_per_core:,.0f} deliveries/s per core; "
        f"prune {inputs.prune_events_per_s:,.0f} events/s "
        f"({inputs.prune_events_per_pg_core_s:,.0f} per PostgreSQL core-second)"
    ]
    return "\n".join(head + plan(inputs, seconds=seconds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity_plan")
    parser.add_argument("figures", nargs="?", default="var/capacity.json")
    parser.add_argument("--daphne-http-per-core", type=float, default=HTTP_PER_CORE)
    parser.add_argument("--daphne-ws-per-core", type=float, default=WS_PER_CORE)
    args = parser.parse_args(argv)
    figures = json.loads(Path(args.figures).read_text())
    print(plan_text(figures, http_per_core=args.daphne_http_per_core,
                    ws_per_core=args.daphne_ws_per_core))
    return 0


if __name__ == "__main__":
    sys.exit(main())
