"""The reporter's background mode over both transports, HTTP and the ingest websocket, against
a live Daphne of this module's own (stopped, paused and restarted on its port): the same
assertions prove both deliver every event once and in order, survive a server that goes
away, spool and resume, refuse alike, and never make the caller wait."""

from __future__ import annotations

import json
import logging
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contextadmin_sdk.client import ReportError, RunReporter
from contextadmin_sdk.client.socket_transport import SocketConnection
from contextadmin_sdk.client.transport import HttpConnection, encode_record
from websockets.sync.client import connect

from devservers.processes import PROJECT, free_port, process_start, process_stop, wait_for_port
from tests.support.demo import DEMO
from tests.support.live_server import LiveServer, live_server_run

pytestmark = pytest.mark.slow

TRANSPORTS = ("http", "websocket")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    """A Daphne of this module's own (its tests stop and restart it), Generator and a token."""
    for server in live_server_run(tmp_path_factory.mktemp("transports"), username="tr"):
        server.manage("import_context", str(DEMO / "context_variables.json"), "--workflow",
                      "Generator")
        token = server.manage("create_api_token", "transports").stdout.strip()
        yield server, token


@pytest.fixture
def server(site: tuple[LiveServer, str]) -> Iterator[tuple[LiveServer, str]]:
    """The module's Daphne, up again after a test that stopped or paused it."""
    yield site
    daphne = site[0].daphne
    if daphne.process is not None and daphne.process.poll() is None:
        daphne.process.send_signal(signal.SIGCONT)
    else:
        daphne.start()


def reporter_for(url: str, token: str, transport: str, **options: Any) -> RunReporter:
    return RunReporter(
        url, token, background=True, transport=transport, backoff=0.05, max_backoff=0.3,
        timeout=3.0, **options,
    )


def stored_events(server: LiveServer, token: str, run_id: str) -> list[dict[str, Any]]:
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{server.url}/api/runs/{run_id}/events/?limit=10000",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return list(json.loads(response.read())["events"])


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [event["text"] for event in events if event["type"] == "agent_text"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_event_arrives_once_in_order(server, transport):
    site, token = server
    reporter = reporter_for(site.url, token, transport, batch_size=40)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    for i in range(300):
        reporter.event("agent_text", agent="InterviewAgent", text=f"turn {i}")
    reporter.event("run_status", status="completed")
    assert reporter.close(timeout=20) is True
    assert reporter.transport_in_use == transport
    events = stored_events(site, token, run_id)
    assert [event["seq"] for event in events] == list(range(1, 302))
    assert texts(events) == [f"turn {i}" for i in range(300)]
    assert reporter.last_acked_seq == 301


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_batch_sent_again_is_acknowledged_again_and_stored_once(server, transport):
    """What a re-send after a dropped answer does: the same seqs, acked, not stored twice."""
    site, token = server
    reporter = reporter_for(site.url, token, transport)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    assert reporter.wait_started(10)
    events = [{"type": "agent_text", "agent": "a", "text": str(i), "seq": i} for i in (1, 2, 3)]
    data = encode_record({"events": events})
    if transport == "http":
        connection: Any = HttpConnection(base_url=site.url, timeout=5)
        send = lambda: connection.post(f"/api/runs/{run_id}/events/", data, token=token)  # noqa: E731
    else:
        connection = SocketConnection(base_url=site.url, run_id=run_id, timeout=5)
        send = lambda: connection.batch_send(data, token=token)  # noqa: E731
    first = send()
    connection.close()  # the next send reconnects, as after a drop
    again = send()
    connection.close()
    assert first["last_seq"] == again["last_seq"] == 3
    assert [ack.get("duplicate", False) for ack in again["acks"]] == [True, True, True]
    assert [event["seq"] for event in stored_events(site, token, run_id)] == [1, 2, 3]
    reporter.close(timeout=0)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_restart_mid_run_loses_nothing_and_duplicates_nothing(server, transport, caplog):
    site, token = server
    reporter = reporter_for(site.url, token, transport, batch_size=25)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        for i in range(100):
            reporter.event("agent_text", agent="a", text=str(i))
        assert reporter.flush(timeout=20)
        site.daphne.stop()  # every open connection and socket drops
        for i in range(100, 150):
            reporter.event("agent_text", agent="a", text=str(i))
        assert reporter.flush(timeout=0.5) is False
        site.daphne.start()
        for i in range(150, 200):
            reporter.event("agent_text", agent="a", text=str(i))
        assert reporter.close(timeout=20) is True
    assert reporter.transport_in_use == transport  # reconnected, not fallen back
    assert texts(stored_events(site, token, run_id)) == [str(i) for i in range(200)]
    messages = [record.getMessage() for record in caplog.records]
    assert sum("server unavailable" in m for m in messages) == 1
    assert sum("reachable again" in m for m in messages) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_away_the_spool_keeps_the_run_and_resume_delivers_it(server, transport, tmp_path):
    site, token = server
    site.daphne.stop()
    first = reporter_for(site.url, token, transport, spool_dir=tmp_path)
    run_id = first.start(workflow="Generator", enterprise_id="acme")
    for i in range(30):
        first.event("agent_text", agent="a", text=str(i))
    assert first.close(timeout=0.3) is False  # the runtime stops here; the spool keeps it all
    site.daphne.start()
    again = reporter_for(site.url, token, transport, spool_dir=tmp_path)
    resumed = again.resume(run_id)  # the server never saw the run: rebuilt from the spool
    assert resumed.server is None and len(resumed.unsent) == 30
    again.event("run_status", status="completed")
    assert again.close(timeout=20) is True
    assert again.transport_in_use == transport
    events = stored_events(site, token, run_id)
    assert texts(events) == [str(i) for i in range(30)]
    assert [event["seq"] for event in events] == list(range(1, 32))
    assert not (tmp_path / f"{run_id}.jsonl").exists()  # ended and acknowledged


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_batch_stops_reporting_with_the_same_error(server, transport, caplog):
    site, token = server
    reporter = reporter_for(site.url, token, transport)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="a", text="fine")
    assert reporter.flush(timeout=10)
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        reporter.event("agent_text", text="no agent")  # refused, naming the field
        reporter.event("agent_text", agent="a", text="after")
        assert reporter.close(timeout=5) is False
    assert reporter.transport_in_use == transport
    assert "400 events[0].agent" in (reporter.error or ""), reporter.error
    assert sum("reporting stopped" in r.getMessage() for r in caplog.records) == 1
    assert texts(stored_events(site, token, run_id)) == ["fine"]  # nothing of the bad batch


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_callers_events_stay_fast_while_the_server_is_stalled(server, transport):
    site, token = server
    reporter = reporter_for(site.url, token, transport, batch_size=20)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="a", text="0")
    assert reporter.flush(timeout=10)  # the socket (or connection) is open
    assert site.daphne.process is not None
    site.daphne.process.send_signal(signal.SIGSTOP)  # accepts nothing, answers nothing
    try:
        slowest = 0.0
        for i in range(1, 500):
            began = time.perf_counter()
            reporter.event("agent_text", agent="a", text=str(i))
            slowest = max(slowest, time.perf_counter() - began)
        assert reporter.flush(timeout=0.5) is False
    finally:
        site.daphne.process.send_signal(signal.SIGCONT)
    assert slowest < 0.05, slowest  # never the sender's 3 s timeout, nor any of it
    assert reporter.close(timeout=30) is True
    assert texts(stored_events(site, token, run_id)) == [str(i) for i in range(500)]


CHILD = """
import logging, sys
sys.modules["websockets"] = None  # as if the websocket extra were not installed
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
from contextadmin_sdk.client import ReportError, RunReporter
url, token = sys.argv[1:3]
reporter = RunReporter(url, token, background=True)
run_id = reporter.start(workflow="Generator", enterprise_id="acme")
for i in range(5):
    reporter.event("agent_text", agent="a", text=str(i))
print(run_id, reporter.close(timeout=20), reporter.transport_in_use)
"""


def test_without_the_websockets_library_the_reporter_goes_over_http(server):
    site, token = server
    child = subprocess.run(
        [sys.executable, "-c", CHILD, site.url, token],
        capture_output=True, text=True, timeout=60, cwd=PROJECT,
        env={**site.env, "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}"},
    )
    assert child.returncode == 0, child.stderr
    run_id, closed, transport = child.stdout.split()
    assert (closed, transport) == ("True", "http")
    lines = [line for line in child.stderr.splitlines() if "websockets library" in line]
    assert len(lines) == 1 and "reporting over HTTP" in lines[0], child.stderr
    assert texts(stored_events(site, token, run_id)) == ["0", "1", "2", "3", "4"]


REVOKE = """
from runs.models import ApiToken
from runs.tokens import api_token_revoke
api_token_revoke(token=ApiToken.objects.get(name={name!r}))
"""


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_token_revoked_mid_run_is_the_same_refusal(server, transport, caplog):
    """The socket is open (opened once the run exists) when the token is revoked: the server
    refuses the next batch with 401, as the events POST does, and reporting stops."""
    site, _ = server
    name = f"revoked-{transport}"
    token = site.manage("create_api_token", name).stdout.strip()
    reporter = reporter_for(site.url, token, transport)
    reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="a", text="before")
    assert reporter.flush(timeout=10)
    site.manage("shell", "-c", REVOKE.format(name=name))
    time.sleep(1.5)  # the Daphne's cache of the token ends (runs.tokens.TOKEN_CACHE_S)
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        reporter.event("agent_text", agent="a", text="after")
        assert reporter.close(timeout=5) is False
    assert reporter.transport_in_use == transport
    assert "401 Authorization:" in (reporter.error or ""), reporter.error  # the field named
    assert "revoked" in (reporter.error or ""), reporter.error
    messages = [record.getMessage() for record in caplog.records]
    assert sum("reporting stopped" in m for m in messages) == 1, messages


NGINX_WITHOUT_UPGRADE = """
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_http_version 1.1;
        }}
    }}
}}
"""


@pytest.fixture
def proxy_without_upgrade(server, tmp_path: Path) -> Iterator[str]:
    """Debian's nginx in front of the Daphne, configured as a plain HTTP proxy: it passes no
    ``Upgrade`` header on, so a websocket handshake reaches Django as a GET (404)."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.skip("Debian's nginx is not installed")
    port = free_port()
    conf = tmp_path / "nginx.conf"
    conf.write_text(NGINX_WITHOUT_UPGRADE.format(
        dir=tmp_path, port=port, upstream=server[0].daphne.port
    ))
    process = process_start([nginx, "-p", str(tmp_path), "-c", str(conf)],
                            log_path=tmp_path / "nginx.out")
    try:
        wait_for_port(port, process=process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process_stop(process)


def test_behind_a_proxy_that_does_not_upgrade_the_reporter_goes_over_http(
    server, proxy_without_upgrade, caplog
):
    site, token = server
    reporter = reporter_for(proxy_without_upgrade, token, "auto")
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        for i in range(50):
            reporter.event("agent_text", agent="a", text=str(i))
        assert reporter.flush(timeout=20)
        for i in range(50, 60):
            reporter.event("agent_text", agent="a", text=str(i))
        assert reporter.close(timeout=20) is True
    assert reporter.transport_in_use == "http"
    messages = [record.getMessage() for record in caplog.records]
    assert sum("ingest websocket is unavailable" in m for m in messages) == 1, messages
    assert "answered 404" in next(m for m in messages if "websocket" in m)
    assert texts(stored_events(site, token, run_id)) == [str(i) for i in range(60)]


@pytest.fixture(scope="module")
def limited_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    """A Daphne whose tokens may make 60 requests a minute (a burst of 60, then 1 a second)
    and hold one ingest socket each, and a token of its own to read what was stored."""
    workdir = tmp_path_factory.mktemp("limited")
    for server in live_server_run(
        workdir, username="lim", API_RATE_LIMIT_PER_MINUTE="60", API_MAX_SOCKETS_PER_TOKEN="1"
    ):
        server.manage("import_context", str(DEMO / "context_variables.json"), "--workflow",
                      "Generator")
        yield server, server.manage("create_api_token", "reader").stdout.strip()


def bucket_drain(url: str, token: str, run_id: str) -> None:
    """Spend the token's requests until the server refuses one (429)."""
    for _ in range(200):
        try:
            state_get(url, token, run_id)
        except urllib.error.HTTPError as exc:
            assert exc.code == 429
            return
    raise AssertionError("no 429 after 200 requests")


def state_get(url: str, token: str, run_id: str) -> Any:
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{url}/api/runs/{run_id}/state/", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return json.loads(response.read())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_overloaded_token_is_told_when_to_retry_and_everything_arrives(
    limited_site, transport, caplog
):
    site, reader = limited_site
    token = site.manage("create_api_token", f"limited-{transport}").stdout.strip()
    run_id = RunReporter(site.url, token).start(workflow="Generator", enterprise_id="acme")
    # What the transport is told: a 429 with the server's Retry-After, as over HTTP.
    data = encode_record({"events": [{"type": "agent_text", "agent": "a", "text": "x", "seq": 1}]})
    if transport == "http":
        connection: Any = HttpConnection(base_url=site.url, timeout=5)
        send = lambda: connection.post(f"/api/runs/{run_id}/events/", data, token=token)  # noqa: E731
    else:
        connection = SocketConnection(base_url=site.url, run_id=run_id, timeout=5)
        send = lambda: connection.batch_send(data, token=token)  # noqa: E731
    bucket_drain(site.url, token, run_id)
    with pytest.raises(ReportError) as refused:
        send()
    connection.close()
    assert refused.value.status == 429 and refused.value.retry_after == 1.0
    # What a reporter started now does with it (its start and its socket or POSTs are refused
    # until the bucket refills): waits, retries, delivers everything; the chat never waits.
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        reporter = reporter_for(site.url, token, transport)
        began = time.perf_counter()
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        for i in range(10):
            reporter.event("agent_text", agent="a", text=str(i))
        assert time.perf_counter() - began < 0.5  # not the 1 s Retry-After
        assert reporter.close(timeout=30) is True
    assert reporter.transport_in_use == transport
    outages = [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage()]
    assert outages and all("429" in m for m in outages), outages
    events = [event["text"] for event in stored_events(site, reader, run_id)]
    assert events == [str(i) for i in range(10)]


def test_when_the_tokens_sockets_are_all_taken_the_reporter_goes_over_http(limited_site, caplog):
    site, reader = limited_site
    token = site.manage("create_api_token", "one-socket").stdout.strip()
    other = RunReporter(site.url, token).start(workflow="Generator", enterprise_id="acme")
    with connect(  # another runtime of the token holds its one socket
        f"{site.daphne.ws_url}/ws/ingest/{other}/",
        additional_headers={"Authorization": f"Bearer {token}"},
    ), caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        reporter = reporter_for(site.url, token, "websocket")
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        for i in range(5):
            reporter.event("agent_text", agent="a", text=str(i))
        assert reporter.close(timeout=20) is True
    assert reporter.transport_in_use == "http"
    messages = [record.getMessage() for record in caplog.records]
    unavailable = [m for m in messages if "ingest websocket is unavailable" in m]
    assert len(unavailable) == 1 and "API_MAX_SOCKETS_PER_TOKEN" in unavailable[0], messages
    assert [e["text"] for e in stored_events(site, reader, run_id)] == [str(i) for i in range(5)]
