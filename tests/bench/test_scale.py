"""``python -m bench --quick --only B10,B11``: the scale figures run end to end at tiny sizes,
print their lines with the machine, and every event reaches every inspector exactly once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_scale_figures_print_and_deliver_every_event_exactly_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "B10,B11"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    printed = {}
    for figure in ("B10", "B11"):
        found = [line for line in lines if line.startswith(f"{figure}  ")]
        assert len(found) == 1, f"{figure}: {found or 'not printed'}"
        line = printed[figure] = found[0]
        assert "target " in line and ("MET" in line or "MISSED" in line), line
        assert "CPU" in line and "Python" in line and "layer" in line, line  # the machine
        assert "RSS" in line and "baseline " in line and "ratio " in line, line
    b10 = printed["B10"]
    assert "all stored, every state at its seq: True" in b10, b10
    assert re.search(r"[\d,]+ bytes/event", b10), b10
    b11 = printed["B11"]
    # the figure and its baseline (10x fewer runs): every event on every socket exactly once
    delivered = re.findall(
        r"delivered ([\d,]+) of ([\d,]+) \(not arrived when the wait ended: (\d+)\), "
        r"duplicated (\d+), out of order (\d+); acks in order ([\d,]+) of ([\d,]+), wrong (\d+)",
        b11,
    )
    assert len(delivered) == 2, b11
    for got, expected, missing, duplicated, reordered, acks, sent, wrong in delivered:
        assert got == expected and int(got.replace(",", "")) > 0, b11
        assert acks == sent and int(acks.replace(",", "")) > 0, b11
        assert (missing, duplicated, reordered, wrong) == ("0", "0", "0", "0"), b11
    assert any(line.startswith("bench: 2 figures") for line in lines), lines[-3:]
