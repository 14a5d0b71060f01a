"""A newcomer's first day, as they live it: ``scripts/run`` as the README gives it, read from
its terminal; a second one on the same port; a restart after Ctrl-C; ``HOST=0.0.0.0``; the
README's command lines pasted as written (the API block after the front page's first-run
token, the ``simulate_run`` line); a demo runtime pointed at an address the server refuses.
The real script, Daphne, nx-27017 and db_worker; nothing of ours is mocked."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devservers.processes import PROJECT, free_port
from tests.inspector.conftest import wait_until
from tests.test_readme_commands import NoRedirect, pids_in_group, readme_command, stopped

pytestmark = pytest.mark.slow

READY = "run: ready: open "


@dataclass
class ScriptRun:
    """One ``scripts/run`` in its own process group (a terminal's foreground job)."""

    process: subprocess.Popen[bytes]
    port: int
    mongo_port: int
    env: dict[str, str]
    log_path: Path

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def run_lines(self) -> list[str]:
        """What the script itself said (its ``run:`` lines), in order."""
        return [line for line in self.log.splitlines() if line.startswith("run: ")]

    def stop(self) -> int:
        os.killpg(self.process.pid, signal.SIGINT)  # Ctrl-C
        return stopped(self.process, (self.port, self.mongo_port))


def script_env(workdir: Path, **extra: str) -> dict[str, str]:
    """A terminal's environment, on a database and var/ of ``workdir`` (no operator given:
    the script generates ``admin``'s password, as on a newcomer's machine)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "DJANGO_", "MONGODB_URI", "REDIS_URL"))}
    env.update(
        PORT=str(free_port()), MONGO_PORT=str(free_port()),
        CONTEXTADMIN_VAR=str(workdir / "var"),
        DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
        PYTHONUNBUFFERED="1", **extra,
    )
    return env


def launch(env: dict[str, str], log_path: Path) -> ScriptRun:
    """Start ``scripts/run`` and wait for its ready line."""
    process = subprocess.Popen(
        [str(PROJECT / "scripts" / "run")], cwd=PROJECT, env=env, start_new_session=True,
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )
    script = ScriptRun(process, int(env["PORT"]), int(env["MONGO_PORT"]), env, log_path)

    def ready() -> bool:
        assert process.poll() is None, script.log
        return READY in script.log

    try:
        wait_until(ready, timeout=120, message="scripts/run's ready line")
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    return script


def kill(script: ScriptRun) -> None:
    if script.process.poll() is None or pids_in_group(script.process.pid):
        os.killpg(script.process.pid, signal.SIGKILL)
        script.process.wait()


def shell(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A command pasted into a terminal at the repository's root."""
    return subprocess.run(["bash", "-c", command], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=180)


def logs_in(url: str, username: str, password: str) -> bool:
    """The admin's login form, as a browser posts it: does it let the operator in?"""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(jar := http.cookiejar.CookieJar())
    )
    opener.open(f"{url}/admin/login/", timeout=10).read()
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": csrf, "username": username,
                                   "password": password, "next": "/"}).encode()
    request = urllib.request.Request(  # noqa: S310  (loopback)
        f"{url}/admin/login/?next=/", data=form, headers={"Referer": f"{url}/admin/login/"}
    )
    with opener.open(request, timeout=10) as response:
        return response.url == f"{url}/" and "First run" in response.read().decode()


@pytest.fixture(scope="module")
def everywhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScriptRun]:
    """``HOST=0.0.0.0 scripts/run``: what a newcomer types to reach it from another machine."""
    workdir = tmp_path_factory.mktemp("everywhere")
    script = launch(script_env(workdir, HOST="0.0.0.0"), workdir / "run.log")
    try:
        yield script
    finally:
        kill(script)


# -- the terminal of scripts/run ------------------------------------------------------------------
def test_scripts_run_ends_with_where_to_log_in_and_a_restart_says_how_to_reset_it(tmp_path):
    """The one-time password came out in the middle of the start-up, then the worker's lines
    (two every 10 s) pushed it away; a restart said only "a superuser exists: none created"."""
    env = script_env(tmp_path)
    url = f"http://127.0.0.1:{env['PORT']}"
    first = launch(env, tmp_path / "first.log")
    try:
        wait_until(lambda: "Starting worker" in first.log, message="the worker's start")
        time.sleep(1.5)  # its first webhooks tick runs at once: two lines, every 10 s after
        terminal = first.log.splitlines()
        bottom = [line for line in terminal[next(i for i, line in enumerate(terminal)
                                                 if line.startswith(READY)):]
                  if "Starting worker" not in line]
        assert bottom[0] == (f"{READY}{url}/ (the front page; admin at /admin/, inspector at "
                             "/runs/); Ctrl-C stops")
        login = re.fullmatch(r"run: log in as admin with password (\S+) \(shown once: change "
                             r"it in the admin\)", bottom[1])
        assert login, bottom
        assert bottom[2].startswith("run: to watch a real AG2 chat, in another terminal: ")
        assert len(bottom) == 3, bottom  # nothing under it yet: no worker routine
        assert "webhooks_tick" not in first.log
        assert logs_in(url, "admin", login.group(1))
        assert first.stop() == 130
    finally:
        kill(first)
    again = launch(env, tmp_path / "again.log")
    try:
        assert login.group(1) not in again.log  # shown once
        assert (
            "run: log in as admin with the password set when it was created (lost it? "
            ".venv/bin/python manage.py changepassword admin)"
        ) in again.run_lines()
    finally:
        kill(again)


def test_a_second_scripts_run_on_the_same_port_says_so_and_names_a_free_one(everywhere):
    """It migrated, printed "serving …", then Daphne's CRITICAL Listen failure, and exited."""
    second = shell("scripts/run", everywhere.env)
    said = second.stdout + second.stderr
    assert second.returncode == 1, said
    port = everywhere.port
    assert f"run: cannot listen on 0.0.0.0:{port}: the port is in use" in second.stderr
    suggested = re.search(r"pick another port: PORT=(\d+) scripts/run", second.stderr)
    assert suggested, said
    assert int(suggested.group(1)) not in (port, everywhere.mongo_port)
    with socket.socket() as sock:  # free indeed
        sock.bind(("0.0.0.0", int(suggested.group(1))))
    assert "ready" not in said and "demo_setup" not in said and "Listen failure" not in said


def test_host_everywhere_prints_an_address_that_serves_and_serves_this_machines_name(everywhere):
    """The URL it printed was http://0.0.0.0:PORT/, and every address but loopback (this
    machine's name from another one too) answered "Bad Request (400)"."""
    url = f"http://127.0.0.1:{everywhere.port}"
    assert f"{READY}{url}/ (the front page" in everywhere.log
    assert f"demo_ag2 --url {url}" in everywhere.run_lines()[-1]
    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(  # noqa: S310  (loopback)
        f"{url}/", headers={"Host": f"{socket.gethostname()}:{everywhere.port}"}
    )
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(request, timeout=10)
    assert answer.value.code == 302, answer.value.read()[:300]  # to the login page, not a 400
    assert answer.value.headers["Location"].startswith("/admin/login/")


def test_demo_ag2_at_an_address_the_server_refuses_names_the_fix(everywhere, tmp_path):
    """It said "400 Bad Request; fix what the server names" and the server named nothing."""
    done = shell(
        f".venv/bin/python manage.py demo_ag2 --url http://0.0.0.0:{everywhere.port} "
        f"--token-file {tmp_path / 'token'}", everywhere.env,
    )
    assert done.returncode == 1
    assert "fix what the server names" not in done.stderr
    assert "DJANGO_ALLOWED_HOSTS" in done.stderr and "run: ready: open URL" in done.stderr


# -- the front page's first-run checklist -------------------------------------------------------
@pytest.mark.browser
def test_the_checklist_offers_a_replay_without_ag2_that_completes_its_steps(tmp_path, chromium):
    """Its second step gave only ``demo_ag2`` (AG2 needed) and did not say that it brings its
    own token, after a first step that asks for one; the README's replay was not on it."""
    script = launch(script_env(tmp_path), tmp_path / "run.log")
    try:
        password = re.search(r"^run: log in as admin with password (\S+)", script.log, re.M)
        assert password, script.log
        url = f"http://127.0.0.1:{script.port}"
        context = chromium.new_context(base_url=url)
        page = context.new_page()
        page.goto("/admin/login/?next=/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", password.group(1))
        page.click("input[type=submit]")
        step = page.locator("#step-runtime")
        assert "makes its own API token" in step.inner_text()
        replay = page.locator("#replay-command").inner_text()
        assert replay == f".venv/bin/python manage.py simulate_run --url {url}"
        done = shell(replay, script.env)  # pasted as the page shows it
        assert done.returncode == 0 and "run_status completed" in done.stdout, done
        run_id = re.search(r"^run (\w+): ", done.stdout, re.M)
        assert run_id, done.stdout
        page.reload()
        assert page.locator("#checklist").count() == 0  # every step done: the list makes way
        last_run = page.locator('#workflows tr[data-workflow="GeneratorChat"] .last-run')
        assert last_run.get_attribute("data-run-id") == run_id.group(1)
        assert "completed" in last_run.inner_text()
        context.close()
    finally:
        kill(script)


# -- the README's command lines, pasted ---------------------------------------------------------
def test_readme_api_block_runs_as_written_after_the_first_run_checklists_token(everywhere):
    """The front page's first step is ``create_api_token my-runtime``; the README's block then
    asked for the same name (refused: TOKEN empty, "expected `Bearer <token>`") and posted its
    events to the literal ``RUN_ID``."""
    checklist = shell(".venv/bin/python manage.py create_api_token my-runtime", everywhere.env)
    assert checklist.returncode == 0, checklist.stderr
    for _ in range(2):  # and once more, as one pastes a block again
        block = shell(readme_command("create_api_token"), everywhere.env)
        assert block.returncode == 0 and "Error" not in block.stderr, block
        reported, page = block.stdout.splitlines()
        flips = json.loads(reported)["flips"]
        assert [flip["name"] for flip in flips] == ["interview_complete"], reported
        assert re.fullmatch(rf"http://127\.0\.0\.1:{everywhere.port}/runs/\w+/", page), page


def test_readme_simulate_run_line_runs_as_written_and_lists_what_happened(everywhere):
    """``manage.py simulate_run …`` pasted was "command not found"; its list showed
    ``#12 run_status`` with no status and hand-offs without their target."""
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`([^`\n]*manage\.py simulate_run --url [^`\n]*)`", readme)
    assert found, "the README's simulate_run line"
    done = shell(found.group(1), everywhere.env)
    assert done.returncode == 0, done.stdout + done.stderr
    listed = done.stdout.splitlines()
    assert "  #7 handoff InterviewAgent -> ContextVariablesAgent" in listed
    assert "  #12 run_status completed" in listed
    run_page = re.search(r"^run (\w+): (\S+)$", done.stdout, re.M)
    assert run_page, done.stdout
    assert listed[-1] == f"done: 12 events, last seq 12, run_status completed: {run_page[2]}"
