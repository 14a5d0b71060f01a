"""``python -m bench.capacity [--quick]``: the per-core figures behind docs/deploy.md's capacity
plan that the B-figures do not give, measured on this machine, then the plan itself
(bench/capacity_plan.py: the arithmetic and a simulation of the group commit at 10,000 and
100,000 runs).

- **PostgreSQL inserts per core with the group commit**: ``events_ingest_many`` (the group
  commit's one transaction a round) in this process against a throwaway PostgreSQL cluster,
  rounds of 10 and of 100 runs' one-event batches; the cluster's CPU (postmaster and
  backends) per round, fitted as ``a + b·k`` core-seconds for a round of ``k`` batches.
- **Retention**: ``runs_prune`` (``manage.py prune_runs``' service) deleting ended runs' events
  on PostgreSQL: events deleted per second and per PostgreSQL core-second, against dropping a
  table of the same rows (what detaching and dropping a time partition costs).
- **Redis fan-out**: the pubsub channel layer's cost in redis-server: one ``PUBLISH`` per
  broadcast, delivered to each subscribed connection (each Daphne process with an inspector
  on the run); redis-server's CPU per delivery with 1 and 4 subscribers.

The cluster runs with ``fsync`` off (devservers/postgres.py): the figures are CPU, not disk.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

from bench.reporting import own_cpu, tree_cpu
from devservers.postgres import Postgres
from devservers.processes import Redis

perf = time.perf_counter


def postgres_figures(postgres: Postgres, *, runs: int, rounds: int, prune_events: int) -> dict:
    """Group-commit inserts and prune deletes, in this process (Django on the cluster)."""
    from bench.indb import django_setup

    url = postgres.create_database("bench_capacity")
    django_setup(url)
    from django.db import connection

    from bench.live import event
    from contextadmin.services import workflow_import
    from runs.services import lifecycle
    from runs.services.broadcast import broadcasts_collected
    from runs.services.ingest import IngestRequest, events_ingest_many
    demo = Path(__file__).resolve().parents[1] / "contextadmin" / "demo"
    workflow_import(name="Generator", data=(demo / "context_variables.json").read_bytes())
    run_ids = [
        lifecycle.run_start(workflow_name="Generator", enterprise_id=f"cap-{i}").run.pk
        for i in range(runs)
    ]
    assert postgres.process is not None
    pid = postgres.process.pid
    out: dict = {"rounds": {}}
    seqs = dict.fromkeys(run_ids, 0)
    for size in (10, 100):
        groups = [run_ids[i:i + size] for i in range(0, runs, size)]
        cpu0, own0, wall0, events = tree_cpu(pid), own_cpu(), perf(), 0
        for index in range(rounds):
            group = groups[index % len(groups)]
            requests = []
            for run_id in group:
                seqs[run_id] += 1
                requests.append(IngestRequest(run_id=run_id, events=[event(seqs[run_id])]))
            # As the server commits: broadcasts collected for the event loop to send, not sent
            # from this thread (which would cost a thread start per run here).
            with broadcasts_collected():
                outcomes = events_ingest_many(requests=requests)
            assert not [o for o in outcomes if isinstance(o, Exception)], outcomes[:1]
            events += len(requests)
        wall = perf() - wall0
        out["rounds"][size] = {
            "events": events,
            "wall_s": wall,
            "events_per_s": events / wall,
            "postgres_cpu_s": tree_cpu(pid) - cpu0,
            "python_cpu_s": own_cpu() - own0,  # the committing thread's share of a Daphne
        }
    small, large = out["rounds"][10], out["rounds"][100]
    per_round = {k: v["postgres_cpu_s"] / rounds for k, v in ((10, small), (100, large))}
    b = (per_round[100] - per_round[10]) / 90  # core-s per batch in a round
    a = max(per_round[10] - 10 * b, 0.0)  # core-s per round (the commit itself)
    out["postgres_round_fixed_s"], out["postgres_per_batch_s"] = a, b
    out["postgres_inserts_per_core"] = large["events"] / large["postgres_cpu_s"]
    out["python_commit_per_event_s"] = large["python_cpu_s"] / large["events"]
    out["prune"] = prune_figures(connection, pid, prune_events)
    return out


def prune_figures(connection, pid: int, events: int) -> dict:
    """Fill ended runs' events with SQL, then time runs_prune against a DROP of a copy."""
    import datetime as dt

    from django.utils import timezone

    from runs.models import Run
    from runs.services.retention import runs_prune

    per_run = 500
    runs = max(1, events // per_run)
    with connection.cursor() as cursor:
        # Ended copies of one run, 40 days old; every other column copied as it is (so the
        # statement follows the model's columns).
        ended = "now() - interval '40 days'"
        changed = {"id": "'old-' || g", "status": "'completed'", "last_seq": "%s",
                   "flip_count": "0", "token_id": "NULL", "started_at": ended, "ended_at": ended}
        columns = [f.column for f in Run._meta.concrete_fields]
        # The model's own column names and fixed SQL: nothing from outside.
        copy = (
            f"INSERT INTO runs_run ({', '.join(columns)}) "  # noqa: S608
            f"SELECT {', '.join(changed.get(c, c) for c in columns)} "
            "FROM runs_run, generate_series(1, %s) g WHERE runs_run.id = "
            "(SELECT id FROM runs_run WHERE id NOT LIKE 'old-%%' LIMIT 1)"
        )
        cursor.execute(copy, [per_run, runs])
        cursor.execute(
            "INSERT INTO runs_runevent (run_id, seq, type, agent, payload, result, received_at) "
            "SELECT r.id, s, 'agent_text', 'InterviewAgent', jsonb_build_object('type', "
            "'agent_text', 'agent', 'InterviewAgent', 'text', repeat('x', 200), 'seq', s), "
            "'{}'::jsonb, now() - interval '40 days' "
            "FROM runs_run r, generate_series(1, %s) s WHERE r.id LIKE 'old-%%'",
            [per_run],
        )
        cursor.execute("CREATE TABLE partition_stand_in AS SELECT * FROM runs_runevent "
                       "WHERE run_id LIKE 'old-%%'")
        cursor.execute("ANALYZE")
    cpu0, own0, wall0 = tree_cpu(pid), own_cpu(), perf()
    pruned = runs_prune(cutoff=timezone.now() - dt.timedelta(days=30))
    wall = perf() - wall0
    postgres_cpu, python_cpu = tree_cpu(pid) - cpu0, own_cpu() - own0
    drop0 = perf()
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE partition_stand_in")
    drop = perf() - drop0
    return {
        "runs": pruned.runs,
        "events": pruned.events,
        "wall_s": wall,
        "events_per_s": pruned.events / wall,
        "events_per_postgres_core_s": pruned.events / max(postgres_cpu, 1e-9),
        "postgres_cpu_s": postgres_cpu,
        "python_cpu_s": python_cpu,
        "drop_table_s": drop,
    }


def redis_figures(workdir: Path, *, messages: int) -> dict:
    """redis-server CPU per PUBLISH delivered to 1 and to 4 subscribed connections."""
    import redis as redis_py

    server = Redis(workdir=workdir).start()
    out: dict = {}
    try:
        assert server.process is not None
        payload = json.dumps({"type": "event", "seq": 1, "text": "x" * 500}).encode()
        for subscribers in (1, 4):
            channel = f"group-{subscribers}"
            received = [0] * subscribers
            ready = threading.Barrier(subscribers + 1)

            def listen(
                index: int,
                channel: str = channel,
                received: list = received,
                ready: threading.Barrier = ready,
            ) -> None:
                client = redis_py.Redis.from_url(server.url)
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(channel)
                pubsub.get_message(timeout=1)
                ready.wait()
                deadline = time.monotonic() + 120
                while received[index] < messages and time.monotonic() < deadline:
                    if pubsub.get_message(timeout=1):
                        received[index] += 1
                pubsub.close()

            threads = [threading.Thread(target=listen, args=(i,)) for i in range(subscribers)]
            for thread in threads:
                thread.start()
            ready.wait()
            publisher = redis_py.Redis.from_url(server.url)
            cpu0, wall0 = tree_cpu(server.process.pid), perf()
            for start in range(0, messages, 200):
                pipe = publisher.pipeline(transaction=False)
                for _ in range(min(200, messages - start)):
                    pipe.publish(channel, payload)
                pipe.execute()
            for thread in threads:
                thread.join(timeout=180)
            cpu, wall = tree_cpu(server.process.pid) - cpu0, perf() - wall0
            delivered = sum(received)
            out[subscribers] = {
                "published": messages,
                "delivered": delivered,
                "wall_s": wall,
                "redis_cpu_s": cpu,
                "deliveries_per_core_s": delivered / max(cpu, 1e-9),
                "publishes_per_core_s": messages / max(cpu, 1e-9),
            }
    finally:
        server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (the test suite)")
    parser.add_argument("--output", default="var/capacity.json", help="where the figures go")
    args = parser.parse_args(argv)
    import tempfile

    from bench.capacity_plan import plan_text

    runs, rounds, prune_events, messages = (
        (100, 40, 20_000, 2_000) if args.quick else (1000, 400, 1_000_000, 100_000)
    )
    workdir = Path(tempfile.mkdtemp(prefix="contextadmin-capacity-"))
    postgres = Postgres().start()
    try:
        figures = {"postgres": postgres_figures(postgres, runs=runs, rounds=rounds,
                                                prune_events=prune_events)}
    finally:
        from django.db import connections

        connections.close_all()
        postgres.stop()
    figures["redis"] = redis_figures(workdir, messages=messages)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))
    print(plan_text(figures, seconds=2.0 if args.quick else 6.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
