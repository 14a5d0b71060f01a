"""bench/reporter_transports.py at a tiny size: both transports, paced and saturated, each
delivering every event exactly once over the transport it was asked for."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from devservers.processes import PROJECT

pytestmark = pytest.mark.slow


def test_both_transports_report_every_event_once_over_the_transport_asked_for() -> None:
    env = {**os.environ, "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}"}
    run = subprocess.run(
        [sys.executable, "-m", "bench.reporter_transports", "--runs", "12", "--seconds", "1",
         "--burst-runs", "4", "--burst-seconds", "0.5", "--procs", "2", "--inspectors", "4"],
        capture_output=True, text=True, timeout=240, cwd=PROJECT, env=env,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("B11.")]
    assert [line.split()[0] for line in lines] == [
        "B11.http.paced", "B11.ws.paced", "B11.http.saturated", "B11.ws.saturated",
    ]
    for line, transport, runs in zip(
        lines, ("http", "websocket") * 2, (12, 12, 4, 4), strict=True
    ):
        assert f"{runs} runs over {transport}:" in line, line
        assert "exactly once yes" in line and f"fully acknowledged {runs}/{runs}" in line, line
        assert float(re.search(r"committed ([\d,]+) events/s", line)[1].replace(",", "")) > 0
    assert "p99" in lines[0] and "p99" in lines[1]  # the paced ones had inspectors
