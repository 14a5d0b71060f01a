"""``python -m bench --quick`` runs end to end and prints every figure (docs/benchmarks.md);
the scale figures B10 and B11 run in tests/bench/test_scale.py, B13 in
tests/bench/test_webhooks.py and B11.http, B11.ws, B11.prod, B11.post in
tests/bench/test_reporting.py, so they are left out here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import FIGURES

PROJECT = Path(__file__).resolve().parents[2]
SCALE_FIGURES = (  # own tests: test_scale, test_webhooks, test_reporting
    "B10",
    "B11",
    "B11.http",
    "B11.ws",
    "B11.prod",
    "B11.post",
    "B13.ingest",
    "B13.latency",
    "B13.outage",
)


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.mongo
def test_quick_benchmark_prints_every_figure_with_its_machine() -> None:
    figures = [figure for figure in FIGURES if figure not in SCALE_FIGURES]
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", ",".join(figures)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for figure in figures:
        printed = [line for line in lines if line.startswith(f"{figure}  ")]
        assert len(printed) == 1, f"{figure}: {printed or 'not printed'}"
        line = printed[0]
        assert "target " in line and ("MET" in line or "MISSED" in line), line
        assert "CPU" in line and "Python" in line and "layer" in line, line  # the machine
    floor = next(line for line in lines if line.startswith("B9.ag2  "))
    assert re.search(r"in the same hooks: p50 [\d.]+ µs.*hook p50 / floor p50 [\d.]+x", floor)
    hooks = re.search(r"by hook \(server up\): (.*?);", floor)
    assert hooks, floor
    for hook in ("turn_ended", "folded"):  # the two that report on every call
        assert re.search(rf"{hook} p50 [\d.]+ µs \([\d,]+ calls\)", hooks.group(1)), floor
    assert any(line.startswith("machine: ") for line in lines)
    assert any(line.startswith("database: ") for line in lines)
    assert any(line.startswith(f"bench: {len(figures)} figures") for line in lines), lines[-3:]
