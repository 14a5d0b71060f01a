"""The group commit across processes: two Daphnes on PostgreSQL, twelve runs, and for every run
one runtime on each Daphne streaming into it at once over /ws/ingest/ without seqs. Each
Daphne commits many runs' batches per transaction, locking their rows in one order; the two
processes' transactions overlap on the same runs. Every event is stored once, every run's seqs
are gap-free, each event's ack names the seq it was stored at, and a replay of each run's log
gives the server's latest state."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect

from devservers.processes import server_env
from tests.reliability.helpers import Stack, dump_run, http_json, postgres_run_log, seed

RUNS = 12
EVENTS = 25  # per runtime; two runtimes per run


@pytest.mark.slow
def test_two_daphnes_group_committing_the_same_runs_store_each_event_once(
    postgres_server, tmp_path
):
    database_url = postgres_server.create_database("contextadmin_group_commit")
    env = server_env(database_url, MONGODB_URI="")
    stack = Stack(tmp_path, env, seed(env))
    try:
        servers = [stack.start_daphne(), stack.start_daphne()]
        run_ids = []
        for index in range(RUNS):
            status, body = http_json(
                "POST",
                f"{servers[0].url}/api/runs/",
                {"workflow": "Generator", "enterprise_id": f"group-{index}"},
                token=stack.secret,
            )
            assert status == 201, body
            run_ids.append(body["run_id"])

        async def runtime(run_id: str, side: int) -> dict[str, int]:
            """Send EVENTS events without waiting (they queue and batch), then read the acks."""
            url = f"{servers[side].ws_url}/ws/ingest/{run_id}/"
            headers = {"Authorization": f"Bearer {stack.secret}"}
            texts = [f"{side}/{i}" for i in range(EVENTS)]
            async with connect(url, additional_headers=headers, open_timeout=30) as socket:
                for text in texts:
                    event = {"type": "agent_text", "agent": f"agent{side}", "text": text}
                    await socket.send(json.dumps(event))
                acks = [json.loads(await asyncio.wait_for(socket.recv(), 30)) for _ in texts]
            assert all(ack["type"] == "ack" for ack in acks), acks
            return dict(zip(texts, (ack["seq"] for ack in acks), strict=True))

        async def everyone() -> list[dict[str, int]]:
            return await asyncio.gather(
                *(runtime(run_id, side) for run_id in run_ids for side in (0, 1))
            )

        acked = asyncio.run(everyone())

        for position, run_id in enumerate(run_ids):
            rows, last_seq = postgres_run_log(database_url, run_id)
            assert [seq for seq, _ in rows] == list(range(1, 2 * EVENTS + 1)), run_id
            assert last_seq == 2 * EVENTS
            stored = {payload["text"]: seq for seq, payload in rows}
            assert stored == {**acked[2 * position], **acked[2 * position + 1]}
        for run_id in run_ids[:3]:  # a replay of the log is the server's latest state
            assert dump_run(env, run_id)["replayed_equals_live"]
    finally:
        stack.stop()
