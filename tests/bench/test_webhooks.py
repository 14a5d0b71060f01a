"""``python -m bench --quick --only B13`` runs end to end: webhooks beside ingest (B13)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
B13 = ("B13.ingest", "B13.latency", "B13.outage")


@pytest.mark.slow
def test_quick_b13_prints_its_three_figures_and_loses_no_delivery() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "B13"],
        cwd=PROJECT, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for figure in B13:
        (line,) = [line for line in lines if line.startswith(f"{figure}  ")]
        assert "target " in line and "CPU" in line, line
    (outage,) = [line for line in lines if line.startswith("B13.outage  ")]
    assert "MET" in outage, outage  # every delivery, no new id, in order: not a timing
