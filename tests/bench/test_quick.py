"""``python -m bench --quick`` runs end to end and prints every figure (docs/benchmarks.md);
the scale figures B10 and B11 run in tests/bench/test_scale.py, so they are left out here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import FIGURES

PROJECT = Path(__file__).resolve().parents[2]
SCALE_FIGURES = ("B10", "B11", "B13.http", "B13.prod", "B13.post")  # test_scale, test_reporting


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
    assert any(line.startswith("machine: ") for line in lines)
    assert any(line.startswith("database: ") for line in lines)
    assert any(line.startswith(f"bench: {len(figures)} figures") for line in lines), lines[-3:]
