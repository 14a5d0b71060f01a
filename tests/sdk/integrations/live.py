"""Helpers of the live AG2 tests (both adapters): reading the server's API, and a runtime that
dies mid-run in a process of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from contextadmin_sdk.client.resume import spool_read

from devservers.processes import PROJECT


def api(url: str, token: str, path: str) -> Any:
    request = urllib.request.Request(  # noqa: S310  (loopback test server)
        url + path, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return json.loads(response.read())


def crashed_run(child: str, *, url: str, token: str, spool_dir: Path, kill_after: int) -> str:
    """Run ``tests.sdk.integrations.<child>``, which reports the demo run and SIGKILLs itself
    right after the event with seq ``kill_after``; check it died there, with that event
    spooled, and return the run id."""
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            f"tests.sdk.integrations.{child}",
            url,
            token,
            str(spool_dir),
            str(kill_after),
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == -9, process.stderr[-2000:]  # SIGKILL after the event
    run_id = process.stdout.split("RUN_ID=")[1].split()[0]
    spool = spool_dir / f"{run_id}.jsonl"
    assert spool_read(spool).events[-1]["seq"] == kill_after  # in the spool before the kill
    return run_id


def die_after(session: Any, kill_after: int) -> None:
    """Make this process SIGKILL itself right after the session applies the run event with seq
    ``kill_after`` (a crash child's only change to the session)."""
    emit = session._emit

    def emit_then_die(event: dict[str, Any]) -> object:
        applied = emit(event)
        if event.get("seq") == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        return applied

    session._emit = emit_then_die
