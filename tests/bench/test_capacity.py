"""The capacity plan (docs/deploy.md): the simulation of the group commit tells a database that
keeps up from one that falls behind, and ``python -m bench.capacity --quick`` measures its
inputs on real PostgreSQL and Redis and prints the plan for 10,000 and 100,000 runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.capacity_plan import Inputs, simulate

PROJECT = Path(__file__).resolve().parents[2]
INPUTS = Inputs(
    http_per_core=250, ws_per_core=970, round_fixed_s=0.00075, per_batch_s=0.000065,
    python_per_event_s=0.0, redis_deliveries_per_core=1e6, redis_publishes_per_core=1e6,
    prune_events_per_s=6e5, prune_events_per_pg_core_s=7e5,
)


def test_the_simulated_group_commit_falls_behind_without_enough_database_cores():
    starved = simulate(runs=20_000, daphnes=50, db_cores=1, inputs=INPUTS, seconds=2.0)
    enough = simulate(runs=20_000, daphnes=50, db_cores=8, inputs=INPUTS, seconds=2.0)
    assert not starved.stable and starved.p99_s > 0.5
    assert enough.stable and enough.p99_s < 0.05
    assert starved.mean_round > enough.mean_round  # a slower round gathers more batches


@pytest.mark.slow
@pytest.mark.redis
def test_quick_capacity_measures_its_inputs_and_prints_the_plan(tmp_path):
    output = tmp_path / "capacity.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.capacity", "--quick", "--output", str(output)],
        cwd=PROJECT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(output.read_text())
    prune = figures["postgres"]["prune"]
    assert prune["events"] == prune["runs"] * 500 > 0  # every old run's events deleted
    assert figures["redis"]["4"]["delivered"] == 4 * figures["redis"]["4"]["published"]
    for size in ("10,000 runs", "100,000 runs"):
        assert f"{size} at 1 event/s" in done.stdout, done.stdout[-2000:]
    assert "PostgreSQL cores for ingest" in done.stdout
