"""``scripts/screenshots`` re-takes the README's picture in one command: a fresh demo_setup
database, demo_ag2's run, its page in Debian Chromium."""

from __future__ import annotations

import struct
import subprocess

import pytest

from devservers.processes import PROJECT

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_scripts_screenshots_writes_the_run_page_of_a_completed_demo_run(tmp_path):
    output = tmp_path / "inspector.png"
    done = subprocess.run(
        [str(PROJECT / "scripts" / "screenshots"), "--output", str(output)],
        cwd=PROJECT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the run page of demo_ag2's run" in done.stdout
    header = output.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert width == 1280 and height >= 900  # the whole page at the desktop viewport
