"""The runtime client against a scripted HTTP server: batching, seqs, retries, Retry-After."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from contextadmin_sdk.client import ReportError, RunReporter
from contextadmin_sdk.client.resume import spool_read

from devservers.processes import free_port
from tests.sdk.integrations.fake_server import FakeRunServer


class Script:
    """Answers queued per path; every request body is recorded."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict, dict]] = []
        self.requests: list[tuple[str, dict, float]] = []


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append((self.path, body, time.monotonic()))
            status, headers, answer = script.answers.pop(0)
            data = json.dumps(answer).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", script
    finally:
        httpd.shutdown()


STARTED = (201, {}, {"run_id": "r1", "state": {"seq": 0}})


def test_events_get_client_seqs_and_go_in_batches(server):
    url, script = server
    script.answers = [
        STARTED,
        (200, {}, {"last_seq": 3, "flips": []}),
        (200, {}, {"last_seq": 4, "flips": []}),
    ]
    reporter = RunReporter(url, "ca_x", batch_size=3, flush_interval=60)
    assert reporter.start(workflow="W", enterprise_id="e") == "r1"
    seqs = [reporter.event("agent_text", agent="a", text=str(i)) for i in range(4)]
    reporter.close()
    assert seqs == [1, 2, 3, 4]
    batches = [body["events"] for path, body, _ in script.requests if path.endswith("/events/")]
    assert [[e["seq"] for e in batch] for batch in batches] == [[1, 2, 3], [4]]
    assert reporter.last_acked_seq == 4


def test_a_429_is_retried_after_the_servers_retry_after_not_the_backoff(server):
    url, script = server
    script.answers = [
        STARTED,
        (429, {"Retry-After": "0.3"}, {"error": "slow down"}),
        (200, {}, {"last_seq": 1, "flips": []}),
    ]
    reporter = RunReporter(url, "ca_x", backoff=30.0)  # the backoff alone would wait 30 s
    reporter.start(workflow="W", enterprise_id="e")
    reporter.event("agent_text", agent="a", text="x")
    reporter.close()
    (_, first, t1), (_, again, t2) = script.requests[1:]
    assert first == again  # the same batch, same seqs: safe to repeat
    assert 0.25 <= t2 - t1 < 5


def test_a_client_error_is_raised_with_the_servers_message(server):
    url, script = server
    script.answers = [(400, {}, {"error": "workflow: required"})]
    reporter = RunReporter(url, "ca_x")
    with pytest.raises(ReportError, match="workflow: required") as raised:
        reporter.start(workflow="", enterprise_id="e")
    assert raised.value.status == 400
    assert len(script.requests) == 1  # a 4xx is not retried


def test_an_unreachable_server_is_retried_then_reported():
    reporter = RunReporter(f"http://127.0.0.1:{free_port()}", "ca_x", retries=2, backoff=0.01)
    with pytest.raises(ReportError, match="gave up after 3 attempts"):
        reporter.start(workflow="W", enterprise_id="e")


# -- background mode (what the AG2 integration uses) ----------------------------------------------
def background_reporter(url: str, **options: Any) -> RunReporter:
    """Over HTTP: the stand-in server speaks no websocket (tests/sdk/test_client_transports.py
    runs both transports against Daphne)."""
    reporter = RunReporter(
        url, "ca_x", background=True, backoff=0.02, max_backoff=0.1, transport="http", **options
    )
    reporter.start(workflow="W", enterprise_id="e")
    return reporter


def test_background_events_are_queued_and_sent_by_another_thread():
    fake = FakeRunServer(delay=0.5).start()
    try:
        reporter = background_reporter(fake.url)
        began = time.perf_counter()
        seqs = [reporter.event("agent_text", agent="a", text=str(i)) for i in range(200)]
        enqueue_s = time.perf_counter() - began
        assert reporter.close(timeout=10) is True
        assert seqs == list(range(1, 201))
        assert enqueue_s < 0.25  # a 0.5 s server: the caller never waited for one answer
        assert fake.seqs(reporter.run_id) == seqs
        assert fake.requests < 200  # batched while a request was in flight
    finally:
        fake.stop()


def test_background_server_down_then_up_delivers_everything_and_logs_once(caplog):
    fake = FakeRunServer()  # not started: the port refuses connections
    reporter = background_reporter(fake.url)
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        began = time.perf_counter()
        for i in range(50):
            reporter.event("agent_text", agent="a", text=str(i))
        # waiting on any retry (its backoff: 0.02 s and up) would take 50 x 0.02 = 1 s
        assert time.perf_counter() - began < 0.25
        assert reporter.flush(timeout=0.3) is False
        fake.start()
        try:
            assert reporter.close(timeout=10) is True
            assert fake.seqs(reporter.run_id) == list(range(1, 51))
        finally:
            fake.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("server unavailable" in m for m in messages) == 1
    assert sum("reachable again" in m for m in messages) == 1


def test_an_outage_met_by_many_runs_of_a_process_is_logged_once_and_its_end_once(caplog):
    """A fleet's process reports many runs: one line when the server goes, one when it is back
    (with how many runs waited), not two per run."""
    fake = FakeRunServer()  # not started: the port refuses connections
    reporters = [background_reporter(fake.url) for _ in range(20)]
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        for reporter in reporters:
            reporter.event("agent_text", agent="a", text="hello")
        assert all(r.flush(timeout=0.3) is False for r in reporters)
        fake.start()
        try:
            assert all(r.close(timeout=10) is True for r in reporters)
            assert all(fake.seqs(r.run_id) == [1] for r in reporters)
        finally:
            fake.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("server unavailable" in m for m in messages) == 1, messages
    back = [m for m in messages if "reachable again" in m]
    assert len(back) == 1 and "20 runs of this process waited" in back[0], messages


def test_background_mode_waits_out_a_servers_503_and_then_sends_what_queued_as_one_batch():
    fake = FakeRunServer().start()
    try:
        reporter = background_reporter(fake.url)  # its own backoff: 0.02 s to 0.1 s
        assert reporter.wait_started(5)
        fake.status, fake.retry_after = 503, "1"  # a server shedding load (docs/api.md)
        began = time.monotonic()
        reporter.event("agent_text", agent="a", text="first")
        while fake.events_posts < 1:
            time.sleep(0.01)
        for i in range(30):
            reporter.event("agent_text", agent="a", text=str(i))
        time.sleep(0.5)
        refused_posts = fake.events_posts
        fake.status = None
        assert reporter.close(timeout=10) is True
        assert time.monotonic() - began >= 1.0  # waited the Retry-After, not its backoff
        assert refused_posts == 1  # its own backoff would have tried about 8 times by now
        assert fake.events_posts == 2  # then one batch: the refused event and the 30 after it
        assert fake.seqs(reporter.run_id) == list(range(1, 32))
    finally:
        fake.stop()


def test_background_client_error_stops_reporting_without_raising(caplog):
    fake = FakeRunServer().start()
    try:
        reporter = background_reporter(fake.url)
        assert reporter.wait_started(5)
        fake.status = 400  # the run exists; its events are refused
        with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
            for i in range(20):
                reporter.event("agent_text", agent="a", text=str(i))
            assert reporter.close(timeout=2) is False
        assert "400" in (reporter.error or "")
        assert sum("reporting stopped" in r.getMessage() for r in caplog.records) == 1
    finally:
        fake.stop()


def test_background_capacity_without_a_spool_drops_and_stops():
    reporter = background_reporter(f"http://127.0.0.1:{free_port()}", capacity=10)
    for i in range(25):
        reporter.event("agent_text", agent="a", text=str(i))
    assert reporter.dropped == 15
    assert "more than 10 unsent events" in (reporter.error or "")
    assert reporter.close(timeout=0.2) is False


def test_background_capacity_with_a_spool_keeps_order_through_the_file(tmp_path):
    fake = FakeRunServer()
    reporter = background_reporter(fake.url, capacity=10, spool_dir=tmp_path, batch_size=7)
    for i in range(95):
        reporter.event("agent_text", agent="a", text=str(i))
    assert reporter.dropped == 0
    spool = tmp_path / f"{reporter.run_id}.jsonl"
    kept = spool_read(spool)  # the start, then every event, though the spool is still open
    assert kept.start is not None and [e["seq"] for e in kept.events] == list(range(1, 96))
    fake.start()
    try:
        reporter.event("run_status", status="completed")
        assert reporter.close(timeout=10) is True
        assert fake.seqs(reporter.run_id) == list(range(1, 97))
        assert not spool.exists()  # ended and acknowledged: nothing left to resume
    finally:
        fake.stop()


@pytest.mark.parametrize("ended", [True, False], ids=["completed", "running"])
def test_close_with_the_server_down_names_only_the_ways_that_work(tmp_path, caplog, ended):
    """A completed run cannot be resumed (``attach(run_id=...)`` raises): only deliver it."""
    reporter = background_reporter(f"http://127.0.0.1:{free_port()}", spool_dir=tmp_path)
    reporter.event("agent_text", agent="a", text="hello")
    if ended:
        reporter.event("run_status", status="completed")
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        assert reporter.close(timeout=0.2) is False
    spool = tmp_path / f"{reporter.run_id}.jsonl"
    said = [r.getMessage() for r in caplog.records if "not acknowledged at close" in r.getMessage()]
    assert len(said) == 1, said
    assert f"deliver them with python -m contextadmin_sdk.client deliver {spool}" in said[0]
    assert ("resume the run" in said[0]) is not ended
    assert spool.exists()


def test_resume_delivers_the_spools_unsent_events_after_the_servers_seq(tmp_path):
    fake = FakeRunServer().start()
    try:
        first = background_reporter(fake.url, spool_dir=tmp_path)
        for i in range(5):
            first.event("agent_text", agent="a", text=str(i))
        assert first.flush(timeout=5)
        fake.stop()  # events 6-8 are observed while the server is down, then the runtime dies
        for i in range(5, 8):
            first.event("agent_text", agent="a", text=str(i))
        assert first.close(timeout=0) is False  # its sender stops; the spool keeps 6-8
        run_id = first.run_id
        fake.start()
        again = RunReporter(fake.url, "ca_x", background=True, spool_dir=tmp_path, transport="http")
        resumed = again.resume(run_id)
        assert [e["seq"] for e in resumed.unsent] == [6, 7, 8]
        assert again.event("agent_text", agent="a", text="after") == 9
        assert again.close(timeout=10) is True
        assert fake.seqs(run_id) == list(range(1, 10))
    finally:
        fake.stop()


def test_background_batches_are_taken_while_the_caller_keeps_appending():
    """The caller's thread appends without the lock while the sender builds batches from the
    queue: no batch may see the queue mutate under it (found by the saturated bench)."""
    fake = FakeRunServer().start()
    switching = sys.getswitchinterval()
    try:
        reporter = background_reporter(fake.url, batch_size=500, flush_interval=0)
        sent = 0
        deadline = time.monotonic() + 3
        sys.setswitchinterval(1e-6)  # hand the GIL over as often as possible: races show
        try:
            while time.monotonic() < deadline and sent < 100_000:
                room = 2_000 - (reporter.next_seq - 1 - reporter.last_acked_seq)
                for _ in range(room):
                    reporter.event("agent_text", agent="a", text="x")
                    sent += 1
        finally:
            sys.setswitchinterval(switching)
        assert reporter.close(timeout=30) is True, reporter.error
        assert reporter.error is None
        assert fake.seqs(reporter.run_id) == list(range(1, sent + 1))
    finally:
        fake.stop()
