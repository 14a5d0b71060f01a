"""``RunReporter`` used directly, as a runtime team reporting its own agent framework does, against
a live Daphne: several threads, a fork, a token read from a file, events the server would
refuse, a spool directory it cannot use, the interpreter's exit, ``close()`` and a ``with``
block, the ``deliver`` command given what is not a spool. Each test asserts what the team sees."""

from __future__ import annotations

import http.server
import logging
import subprocess
import sys
import threading
import time

import pytest
from contextadmin_sdk.client import ReportError, RunReporter

from devservers.processes import PROJECT, free_port
from tests.sdk.test_client_transports import stored_events, texts

pytestmark = pytest.mark.slow

ENV = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}"}


def python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (its own process, its own exit)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
        cwd=PROJECT, env=ENV,
    )


def test_events_from_many_threads_each_get_their_own_seq_and_all_arrive(generator_site):
    site, token = generator_site
    reporter = RunReporter(site.url, token, background=True, transport="http")
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    seqs: list[int] = []

    def chat(name: str) -> None:
        for i in range(500):
            seqs.append(reporter.event("agent_text", agent=name, text=f"{name}-{i}"))

    threads = [threading.Thread(target=chat, args=(f"a{n}",)) for n in range(8)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as a busy runtime's may
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert reporter.close(timeout=60) is True, reporter.error
    assert sorted(seqs) == list(range(1, 4001))
    events = stored_events(site, token, run_id)
    assert [event["seq"] for event in events] == list(range(1, 4001))
    assert sorted(texts(events)) == sorted(f"a{n}-{i}" for n in range(8) for i in range(500))


FORK = """
import os, sys
from contextadmin_sdk.client import RunReporter
url, token, spool_dir = sys.argv[1:]
reporter = RunReporter(url, token, background=True, spool_dir=spool_dir)
run_id = reporter.start(workflow="Generator", enterprise_id="acme")
reporter.event("agent_text", agent="a", text="before the fork")
pid = os.fork()
if pid == 0:  # a worker that inherits the reporter, then exits normally (its atexit runs)
    print("child", reporter.event("agent_text", agent="a", text="child"), reporter.close(1),
          flush=True)
    sys.exit(0)
os.waitpid(pid, 0)
for i in range(200):  # past the spool's first pages
    reporter.event("agent_text", agent="a", text="x" * 100)
reporter.event("run_status", status="completed")
print("parent", run_id, reporter.close(timeout=30), flush=True)
"""


def test_a_forked_child_reports_nothing_and_leaves_the_parents_spool_alone(
    generator_site, tmp_path
):
    site, token = generator_site
    done = python(FORK, site.url, token, str(tmp_path))
    assert done.returncode == 0, done.stderr  # the parent was not killed (SIGBUS) by the child
    child, parent = done.stdout.splitlines()
    assert child == "child 0 False"
    assert "forked from process" in done.stderr
    _, run_id, closed = parent.split()
    assert closed == "True"
    events = stored_events(site, token, run_id)
    assert [event["seq"] for event in events] == list(range(1, 203))
    assert "child" not in texts(events)
    assert not (tmp_path / f"{run_id}.jsonl").exists()  # ended and acknowledged


def test_a_token_read_from_a_file_works_and_a_broken_one_is_never_shown(
    generator_site, tmp_path, caplog
):
    site, token = generator_site
    (tmp_path / "token").write_text(token + "\n")
    from_file = (tmp_path / "token").read_text()
    blocking = RunReporter(site.url, from_file)
    run_id = blocking.start(workflow="Generator", enterprise_id="acme")
    blocking.event("agent_text", agent="a", text="blocking")
    assert blocking.close() is True
    background = RunReporter(site.url, from_file, background=True)
    other = background.start(workflow="Generator", enterprise_id="acme")
    background.event("agent_text", agent="a", text="background")
    assert background.close(timeout=20) is True, background.error
    assert texts(stored_events(site, token, run_id)) == ["blocking"]
    assert texts(stored_events(site, token, other)) == ["background"]
    broken = token[:10] + "\n" + token[10:]
    with pytest.raises(ValueError, match=r"^token: ") as refused:
        RunReporter(site.url, broken, background=True)
    assert token[10:] not in str(refused.value)
    assert not [r for r in caplog.records if token[10:] in r.getMessage()]


def test_a_base_url_with_credentials_is_refused_without_showing_them():
    with pytest.raises(ValueError, match=r"^base_url: .*without credentials") as refused:
        RunReporter("https://ops:s3cret@contextadmin.example.com/ca/", "ca_x", background=True)
    assert "'https://contextadmin.example.com/ca/'" in str(refused.value)
    assert "s3cret" not in str(refused.value)


def test_https_to_a_plain_http_server_says_to_give_http(generator_site):
    """It timed out ("The handshake operation timed out") with no word about the scheme."""
    site, token = generator_site
    wrong = site.url.replace("http://", "https://")
    with pytest.raises(ReportError, match="if the server serves plain HTTP, give base_url as "
                                          "http://"):
        RunReporter(wrong, token, retries=0, timeout=2).start(
            workflow="Generator", enterprise_id="acme")


class BareBadRequest(http.server.BaseHTTPRequestHandler):
    """What Django answers a Host it does not serve: a bare 400 page, no JSON error."""

    def do_POST(self) -> None:
        self.send_response(400)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<h1>Bad Request (400)</h1>")

    def log_message(self, *args: object) -> None:
        return None


def test_a_bare_400_before_the_api_names_the_allowed_hosts_not_the_server():
    """It said "fix what the server names", and the server had named nothing."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BareBadRequest)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(ReportError) as refused:
            RunReporter(url, "ca_00000000_x", retries=0).start(workflow="W", enterprise_id="e")
    finally:
        server.shutdown()
    assert "fix what the server names" not in str(refused.value)
    assert "DJANGO_ALLOWED_HOSTS" in str(refused.value)


def test_events_the_server_would_refuse_are_refused_alone_and_the_run_goes_on(
    generator_site, caplog
):
    site, token = generator_site
    reporter = RunReporter(site.url, token, background=True)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    refused = [
        ("tool_response", {"tool": "t", "data": {"score": float("nan")}}),
        ("tool_response", {"tool": "t", "data": {"score": float("inf")}}),
        ("tool_response", {"tool": "t", "data": {"raw": b"\xff\x00"}}),
        ("tool_response", {"tool": "t", "data": {"obj": object()}}),
        ("my_framework_event", {"agent": "a"}),
        ("agent_text", {"agent": "a", "text": "x", "timestamp": 1.0}),
    ]
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        assert reporter.event("agent_text", agent="a", text="first") == 1
        assert [reporter.event(kind, **fields) for kind, fields in refused] == [0] * 6
        assert reporter.event("tool_response", tool="t", data={"score": float("nan")}) == 0
        assert reporter.event("agent_text", agent="a", text="NaN, said") == 2
        assert reporter.close(timeout=20) is True, reporter.error
    assert reporter.invalid == 7
    assert texts(stored_events(site, token, run_id)) == ["first", "NaN, said"]
    nan = [r for r in caplog.records if "data: must be a finite number" in r.getMessage()]
    assert len(nan) == 1  # said once, then counted
    assert "reporter.invalid" in nan[0].getMessage()
    blocking = RunReporter(site.url, token)
    run_id = blocking.start(workflow="Generator", enterprise_id="acme")
    with pytest.raises(ReportError, match=r"\(tool_response\).*data: must be a finite number"):
        blocking.event("tool_response", tool="t", data={"score": float("nan")})
    with pytest.raises(ReportError, match="my_framework_event"):
        blocking.event("my_framework_event", agent="a")
    assert blocking.event("agent_text", agent="a", text="after") == 1
    assert blocking.close() is True
    assert texts(stored_events(site, token, run_id)) == ["after"]


def test_a_spool_dir_that_cannot_be_used_is_said_once_and_the_run_is_still_reported(
    generator_site, tmp_path, caplog
):
    site, token = generator_site
    (tmp_path / "a-file").write_text("")
    spool_dir = tmp_path / "a-file" / "spool"  # a file where a directory should be
    reporter = RunReporter(site.url, token, background=True, spool_dir=spool_dir)
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        reporter.event("agent_text", agent="a", text="kept in memory")
        assert reporter.close(timeout=20) is True
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1
    assert f"could not open the spool {spool_dir}" in said[0]
    assert texts(stored_events(site, token, run_id)) == ["kept in memory"]


AWAY_AT_EXIT = """
import sys
from contextadmin_sdk.client import RunReporter
url, token, spool_dir, count = sys.argv[1:]
reporters = [RunReporter(url, token, background=True, spool_dir=spool_dir)
             for _ in range(int(count))]
for reporter in reporters:
    reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="a", text="x")
"""


def test_the_interpreter_exit_waits_once_for_all_reporters_not_for_each(tmp_path):
    started = time.monotonic()
    done = python(AWAY_AT_EXIT, f"http://127.0.0.1:{free_port()}", "ca_x", str(tmp_path), "8")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 5  # 1 s for all, not 1 s for each of 8
    assert len(list(tmp_path.glob("*.jsonl"))) == 8  # what was not sent waits in the spools


BLOCKING_AT_EXIT = """
import sys
from contextadmin_sdk.client import RunReporter
url, token, away = sys.argv[1:]
reporter = RunReporter(url, token, flush_interval=60, retries=1, backoff=0.01)
reporter.start(workflow="Generator", enterprise_id="acme")
reporter.event("agent_text", agent="a", text="queued")
reporter.base_url = away  # the server goes away before the interpreter exits
"""


def test_blocking_mode_says_what_it_could_not_send_at_exit_without_a_traceback(generator_site):
    site, token = generator_site
    done = python(BLOCKING_AT_EXIT, site.url, token, f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 0, done.stderr
    assert "1 events not sent at exit" in done.stderr
    assert "Traceback" not in done.stderr


def test_after_close_an_event_is_refused_not_silently_lost(generator_site, caplog):
    site, token = generator_site
    background = RunReporter(site.url, token, background=True)
    background.start(workflow="Generator", enterprise_id="acme")
    assert background.close(timeout=20) is True
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        assert background.event("agent_text", agent="a", text="late") == 0
        assert background.event("agent_text", agent="a", text="later") == 0
    assert background.dropped == 2
    assert [r.getMessage() for r in caplog.records if "after close()" in r.getMessage()] != []
    assert len(caplog.records) == 1
    blocking = RunReporter(site.url, token)
    blocking.start(workflow="Generator", enterprise_id="acme")
    assert blocking.close() is True
    with pytest.raises(ReportError, match=r"event\(\) after close\(\)"):
        blocking.event("agent_text", agent="a", text="late")


def test_an_event_before_start_is_refused_and_the_runs_seqs_start_at_one(generator_site, caplog):
    site, token = generator_site
    background = RunReporter(site.url, token, background=True, flush_interval=0.05)
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        early = [background.event("agent_text", agent="a", text="early") for _ in range(3)]
        assert early == [0, 0, 0]
        time.sleep(0.1)  # once due, the early events used to be flushed, raising here
        assert background.event("agent_text", agent="a", text="early") == 0
    assert background.dropped == 4
    assert [r.getMessage() for r in caplog.records] == [
        "event() before start(): not reported (more: counted in reporter.dropped)"
    ]
    run_id = background.start(workflow="Generator", enterprise_id="acme")
    assert background.event("agent_text", agent="a", text="first") == 1
    assert background.close(timeout=20) is True
    assert texts(stored_events(site, token, run_id)) == ["first"]
    blocking = RunReporter(site.url, token)
    with pytest.raises(ReportError, match=r"^event\(\) before start\(\): not reported$"):
        blocking.event("agent_text", agent="a", text="early")
    blocking.start(workflow="Generator", enterprise_id="acme")
    assert blocking.close() is True
    run_id = blocking.start(workflow="Generator", enterprise_id="acme")  # one reporter, two runs
    assert blocking.event("agent_text", agent="a", text="second run") == 1
    assert blocking.close() is True
    assert texts(stored_events(site, token, run_id)) == ["second run"]


def test_a_with_block_that_raises_keeps_its_exception_when_the_close_fails(
    generator_site, caplog
):
    site, token = generator_site
    reporter = RunReporter(site.url, token, retries=0)
    with pytest.raises(KeyError, match="the chat's own"), reporter:
        reporter.start(workflow="Generator", enterprise_id="acme")
        reporter.base_url = f"http://127.0.0.1:{free_port()}"  # the server goes away
        reporter.event("agent_text", agent="a", text="x")
        raise KeyError("the chat's own")
    assert any("not flushed when the block raised" in r.getMessage() for r in caplog.records)


def test_the_deliver_command_says_what_is_wrong_with_what_it_is_given(generator_site, tmp_path):
    site, token = generator_site
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe\x00 not a spool\n")
    deliver = ["-m", "contextadmin_sdk.client", "deliver", "--url", site.url, "--token", token]
    done = subprocess.run(
        [sys.executable, *deliver, "--timeout", "2", str(tmp_path / "binary.jsonl")],
        capture_output=True, text=True, timeout=60, cwd=PROJECT, env=ENV,
    )
    assert done.returncode == 1
    assert "run binary: not delivered" in done.stderr
    assert "Traceback" not in done.stderr
    done = subprocess.run(
        [sys.executable, *deliver, str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=PROJECT, env=ENV,
    )
    assert done.returncode == 2
    assert f"{tmp_path} is a directory" in done.stderr
