"""The README's own commands: ``scripts/run`` starts, serves ``/`` (the front page, sending an
anonymous visitor to the login page), and stops cleanly — on Ctrl-C (SIGINT to the terminal's
process group) and on a SIGTERM to the script alone — with nothing it started left running.
The second-terminal command runs against whatever port the script was given."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from devservers.processes import PROJECT, free_port, wait_for_port

pytestmark = pytest.mark.slow


def pids_in_group(pgid: int) -> list[int]:
    """Every live process of a process group (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":  # state, ppid, pgrp
            found.append(int(entry.name))
    return found


def readme_command(name: str) -> str:
    """The README's shell block that runs ``manage.py <name>`` (continuation lines joined)."""
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    blocks = [b.split("```")[0] for b in text.split("```bash\n")[1:]]
    block = next(b for b in blocks if f"manage.py {name}" in b)
    return block.replace("\\\n", " ").strip()


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def port_open(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start(tmp_path: Path) -> tuple[subprocess.Popen, int, int, dict[str, str]]:
    port, mongo_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "DJANGO_SETTINGS", "MONGODB_URI", "REDIS_URL"))}
    env.update(
        HOST="127.0.0.1", PORT=str(port), MONGO_PORT=str(mongo_port),
        CONTEXTADMIN_VAR=str(tmp_path / "var"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DJANGO_SUPERUSER_USERNAME="admin", DJANGO_SUPERUSER_PASSWORD="readme-pw-4821",
        PYTHONUNBUFFERED="1",
    )
    script = subprocess.Popen(  # its own process group, as a terminal gives a foreground job
        [str(PROJECT / "scripts" / "run")], cwd=PROJECT, env=env, start_new_session=True,
        stdout=open(tmp_path / "run.log", "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )
    wait_for_port(port, timeout=120, process=script)
    deadline = time.monotonic() + 30  # the ready lines follow once Daphne listens
    while "run: ready: open " not in (tmp_path / "run.log").read_text():
        assert time.monotonic() < deadline and script.poll() is None, "no ready line"
        time.sleep(0.05)
    return script, port, mongo_port, env


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def front_page_status(port: int) -> tuple[int, str]:
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(f"http://127.0.0.1:{port}/", timeout=10) as response:
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Location", "")


def stopped(script: subprocess.Popen, ports: tuple[int, ...], *, timeout: float = 30) -> int:
    code = script.wait(timeout=timeout)
    deadline = time.monotonic() + 10
    while pids_in_group(script.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_in_group(script.pid) == [], "processes of scripts/run are still running"
    assert not any(port_open(port) for port in ports), "a port is still served"
    return code


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_scripts_run_serves_the_front_page_and_stops_everything(tmp_path, how):
    script, port, mongo_port, env = start(tmp_path)
    try:
        assert port_open(mongo_port)  # it started nx-27017 too
        status, location = front_page_status(port)
        assert status == 302 and location.startswith("/admin/login/?next=/"), (status, location)
        log = (tmp_path / "run.log").read_text()
        # the second terminal's line, with the MongoDB it started (concept_overview resolves)
        assert (f"MONGODB_URI=mongodb://127.0.0.1:{mongo_port} .venv/bin/python manage.py "
                f"demo_ag2 --url http://127.0.0.1:{port}") in log
        assert "imported workflow GeneratorChat" in log  # the demo with hand-offs
        assert "run: webhooks worker started (manage.py db_worker" in log
        assert any("db_worker" in _cmdline(pid) for pid in pids_in_group(script.pid))
        if how == "ctrl-c":  # the README's second-terminal commands, on this (not 8000) port
            demo = subprocess.run(
                ["bash", "-c", readme_command("demo_ag2")],
                cwd=PROJECT, env=env, capture_output=True, text=True, timeout=180,
            )
            assert demo.returncode == 0, demo.stdout + demo.stderr
            assert f"http://127.0.0.1:{port}/runs/" in demo.stdout + demo.stderr
            assert "run_status completed" in demo.stdout
            assert "MONGODB_URI unset" not in demo.stdout  # the README's prefix reached it
            assert "imported the demo workflow" not in demo.stdout  # scripts/run's, reused
            replay = subprocess.run(  # README's command; no pause between events here
                ["bash", "-c", '.venv/bin/python manage.py simulate_run --url '
                 '"http://127.0.0.1:${PORT:-8000}" --delay 0'],
                cwd=PROJECT, env=env, capture_output=True, text=True, timeout=180,
            )
            assert replay.returncode == 0, replay.stdout + replay.stderr
            assert "#12 run_status" in replay.stdout and "done: 12 events" in replay.stdout
        if how == "ctrl-c":
            os.killpg(script.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        else:
            script.send_signal(signal.SIGTERM)  # to the script alone: it forwards it
        code = stopped(script, (port, mongo_port))
        assert code in (130, 143), code
    finally:
        if script.poll() is None or pids_in_group(script.pid):
            os.killpg(script.pid, signal.SIGKILL)
            script.wait()


def test_readme_lists_the_versions_document_and_how_to_turn_review_on():
    """Issue 22 item 6: docs/versions.md was missing from the documentation list."""
    readme = (PROJECT / "README.md").read_text()
    documentation = readme.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    assert "[docs/versions.md](docs/versions.md)" in documentation
    assert "CONTEXTADMIN_REVIEW=on" in documentation
