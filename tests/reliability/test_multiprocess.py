"""Two Daphne processes on PostgreSQL and Redis, four runtimes posting into the same run at
once without seqs: the server assigns seqs that are unique and gap-free, each batch gets one
contiguous block, and an inspector on the other process sees every event once, in order."""

from __future__ import annotations

import itertools
import threading

import pytest

from devservers.processes import Redis, server_env
from tests.reliability.helpers import (
    Inspector,
    Stack,
    dump_run,
    http_json,
    postgres_run_log,
    seed,
)

CLIENTS = 4  # two per Daphne
BATCHES = 40
BATCH = 3
TOTAL = CLIENTS * BATCHES * BATCH


@pytest.mark.slow
@pytest.mark.redis
def test_two_daphnes_on_postgres_assign_unique_gap_free_seqs(postgres_server, tmp_path):
    database_url = postgres_server.create_database("contextadmin_multiprocess")
    redis = Redis(workdir=tmp_path).start()
    env = server_env(database_url, MONGODB_URI="", REDIS_URL=redis.url)
    stack = Stack(tmp_path, env, seed(env))
    inspector: Inspector | None = None
    try:
        servers = [stack.start_daphne(), stack.start_daphne()]
        status, body = http_json(
            "POST",
            f"{servers[0].url}/api/runs/",
            {"workflow": "Generator", "enterprise_id": "acme"},
            token=stack.secret,
        )
        assert status == 201, body
        run_id = body["run_id"]
        watcher = servers[1]
        inspector = Inspector(
            lambda: watcher.ws_url, run_id, stack.session, until=TOTAL, deadline_s=90
        )
        inspector.start()
        assert inspector.connected.wait(10)

        acks: dict[str, int] = {}  # event text -> the seq the server gave it
        blocks: list[list[int]] = []
        failures: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(CLIENTS)

        def runtime(index: int) -> None:
            server = servers[index % 2]
            barrier.wait(timeout=10)
            for batch in range(BATCHES):
                events = [
                    {"type": "agent_text", "agent": f"agent{index}", "text": f"{index}/{batch}/{i}"}
                    for i in range(BATCH)
                ]
                status, answer = http_json(
                    "POST",
                    f"{server.url}/api/runs/{run_id}/events/",
                    {"events": events},
                    token=stack.secret,
                    timeout=30,
                )
                with lock:
                    if status != 200:
                        failures.append(f"{status} {answer}")
                        return
                    seqs = [ack["seq"] for ack in answer["acks"]]
                    blocks.append(seqs)
                    acks.update(zip((e["text"] for e in events), seqs, strict=True))

        threads = [threading.Thread(target=runtime, args=(i,), daemon=True) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        assert failures == []

        # What the runtimes were told: unique, gap-free, one contiguous block per batch.
        assert sorted(acks.values()) == list(range(1, TOTAL + 1))
        assert all(block == list(range(block[0], block[0] + BATCH)) for block in blocks)

        # What PostgreSQL holds: the same seqs for the same events, and last_seq agrees.
        rows, last_seq = postgres_run_log(database_url, run_id)
        assert [seq for seq, _ in rows] == list(range(1, TOTAL + 1))
        assert {payload["text"]: seq for seq, payload in rows} == acks
        assert last_seq == TOTAL
        agents = [payload["agent"] for _, payload in rows]
        switches = sum(1 for a, b in itertools.pairwise(agents) if a != b)
        assert switches >= 2 * CLIENTS, "the runtimes did not really post concurrently"
        assert dump_run(env, run_id)["replayed_equals_live"]

        # Events posted to either process reach an inspector on the second through Redis.
        inspector.finish(timeout=60)
        assert inspector.errors == []
        assert inspector.seqs == list(range(1, TOTAL + 1))
    finally:
        if inspector is not None:
            inspector.stop_flag.set()
            inspector.join(timeout=5)
        stack.stop()
        redis.stop()
