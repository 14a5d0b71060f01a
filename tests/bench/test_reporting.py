"""``python -m bench --quick --only B11.http,B11.ws,B11.prod,B11.post``: runtimes reporting
with RunReporter over HTTP (and over the ingest websocket: B11.ws), on one Daphne and on the
production shape (nginx, two Daphnes, Redis, PostgreSQL), and the events POST with and
without the group commit: each prints its line, every event reaches every inspector exactly
once, and every process's CPU is reported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.redis
def test_quick_reporting_figures_deliver_every_event_once_and_report_cpu() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "B11.http,B11.ws,B11.prod,B11.post"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = {line.split("  ")[0]: line for line in done.stdout.splitlines() if "  " in line}
    for figure in ("B11.http", "B11.ws", "B11.prod"):
        line = lines[figure]
        counts = re.findall(
            r"delivered ([\d,]+) of ([\d,]+) \(missing (\d+)\), duplicated (\d+), out of order "
            r"(\d+); runs not fully acked at close (\d+), reporter errors 0", line
        )
        assert counts, line
        for got, expected, *wrong in counts:
            assert got == expected and int(got.replace(",", "")) > 0, line
            assert wrong == ["0", "0", "0", "0"], line
        assert "Python" in line and "target " in line, line
    assert re.search(r"; [1-9][\d,]* frames; ", lines["B11.ws"]), lines["B11.ws"]  # no POSTs
    assert all(name in lines["B11.prod"] for name in ("PostgreSQL", "Redis", "nginx",
                                                      "Daphne 1", "Daphne 2")), lines["B11.prod"]
    post = lines["B11.post"]
    assert post.count("errors 0") == 3, post  # with, without the group commit, Django's handler
    assert re.search(r"ratio [\d.]+x events/s; own path vs Django's handler [\d.]+x", post), post
