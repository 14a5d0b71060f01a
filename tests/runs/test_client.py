"""The runtime client against a scripted HTTP server: batching, seqs, retries, Retry-After."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from runs.client import ReportError, RunReporter
from tests.support.processes import free_port


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
