"""The production shape of docs/deploy.md from real parts: Debian's nginx, with the config the
doc gives, in front of two Daphnes on PostgreSQL and Redis. Runtimes report through nginx
(RunReporter in background mode over HTTP and over the ingest socket, plain HTTP POSTs with a
retried batch, the ingest websocket); an inspector socket per run, also through nginx, gets every
event exactly once, in order, whichever Daphne took it; events POSTed to one Daphne reach
inspectors on the other; nginx enforces the documented body limit and its access log never holds
a token."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest
from contextadmin_sdk.client import RunReporter
from websockets.sync.client import connect

from devservers.nginx import Nginx
from devservers.processes import Redis, server_env
from tests.reliability.helpers import (
    Inspector,
    Stack,
    http_json,
    postgres_run_log,
    seed,
    wait_until,
)

EVENTS = 60  # per run
BATCH = 6  # events per plain-HTTP POST


def chat(run: str, count: int) -> list[dict[str, str]]:
    return [{"type": "agent_text", "agent": "InterviewAgent", "text": f"{run} {i}"}
            for i in range(count)]


@pytest.mark.slow
@pytest.mark.redis
def test_nginx_two_daphnes_postgres_redis_deliver_every_event_once(postgres_server, tmp_path):
    database_url = postgres_server.create_database("contextadmin_production_shape")
    redis = Redis(workdir=tmp_path).start()
    env = server_env(database_url, MONGODB_URI="", REDIS_URL=redis.url, DJANGO_DEBUG="0",
                     DJANGO_SECRET_KEY="production-shape-test-" + "x" * 40)
    stack = Stack(tmp_path, env, seed(env))
    proxy: Nginx | None = None
    inspectors: list[Inspector] = []
    try:
        servers = [stack.start_daphne(), stack.start_daphne()]
        proxy = Nginx(workdir=tmp_path / "nginx", upstreams=[s.port for s in servers]).start()
        base = proxy.url

        # Three runs, started through nginx; one inspector on each, also through nginx.
        run_ids = {}
        for name in ("http", "websocket"):
            status, body = http_json("POST", f"{base}/api/runs/",
                                     {"workflow": "Generator", "enterprise_id": name},
                                     token=stack.secret)
            assert status == 201, body
            run_ids[name] = body["run_id"]
        # RunReporter in background mode (what the AG2 integration uses) on both transports:
        # batches as POSTs, and as frames on the ingest socket (the default when installed).
        reporters = {
            f"reporter-{transport}": RunReporter(
                base, stack.secret, background=True, batch_size=BATCH, transport=transport
            )
            for transport in ("http", "websocket")
        }
        for name, reporter in reporters.items():
            run_ids[name] = reporter.start(workflow="Generator", enterprise_id=name)
            # Background mode answers start() at once; watch once the server has the run.
            state_url = f"{base}/api/runs/{run_ids[name]}/state/"
            assert wait_until(
                lambda url=state_url: http_json("GET", url, token=stack.secret)[0] == 200,
                timeout=30,
            )
        for run_id in run_ids.values():
            inspector = Inspector(lambda: proxy.ws_url, run_id, stack.session,
                                  until=EVENTS, deadline_s=90)
            inspector.start()
            inspectors.append(inspector)
        assert all(i.connected.wait(15) for i in inspectors)

        # Both reporters, through nginx.
        for name, reporter in reporters.items():
            for event in chat(name, EVENTS):
                reporter.event(event["type"], agent=event["agent"], text=event["text"])
        # the socket went through nginx's upgrade (no fallback to HTTP)
        assert wait_until(
            lambda: reporters["reporter-websocket"].transport_in_use == "websocket", timeout=15
        )
        for reporter in reporters.values():
            assert reporter.close(timeout=60), reporter.error

        # Plain HTTP POSTs with client seqs; every batch is sent twice (a retry after a lost
        # answer): the second is acknowledged as duplicates, nothing is stored twice.
        events = chat("http", EVENTS)
        for start in range(0, EVENTS, BATCH):
            batch = [{**e, "seq": start + i + 1} for i, e in enumerate(events[start:start + BATCH])]
            answers = [http_json("POST", f"{base}/api/runs/{run_ids['http']}/events/",
                                 {"events": batch}, token=stack.secret) for _ in range(2)]
            assert [status for status, _ in answers] == [200, 200], answers
            first, again = (body["acks"] for _, body in answers)
            assert [a["seq"] for a in first] == [a["seq"] for a in again]
            assert all(a.get("duplicate") for a in again), again
        # A seq that skips ahead is refused with 409, through nginx too.
        status, body = http_json("POST", f"{base}/api/runs/{run_ids['http']}/events/",
                                 {"events": [{**events[0], "seq": EVENTS + 5}]},
                                 token=stack.secret)
        assert status == 409, body

        # The ingest websocket (the upgrade goes through nginx), token in the header.
        url = f"{proxy.ws_url}/ws/ingest/{run_ids['websocket']}/"
        with connect(url, additional_headers={"Authorization": f"Bearer {stack.secret}"},
                     open_timeout=10) as socket:
            for event in chat("websocket", EVENTS):
                socket.send(json.dumps(event))
            acks = [json.loads(socket.recv(timeout=30)) for _ in range(EVENTS)]
        assert [a["seq"] for a in acks] == list(range(1, EVENTS + 1)), acks[:3]

        # Every inspector saw every event of its run once, in order, with the right text.
        for inspector in inspectors:
            inspector.finish(timeout=60)
            assert inspector.errors == []
            assert inspector.seqs == list(range(1, EVENTS + 1))
        for name, run_id in run_ids.items():
            rows, last_seq = postgres_run_log(database_url, run_id)
            assert last_seq == EVENTS
            assert [p["text"] for _, p in rows] == [e["text"] for e in chat(name, EVENTS)]

        # Events crossed processes: POSTed to one Daphne, watched on the other. least_conn
        # sends a POST to the Daphne holding fewer open sockets, so all of them may land on one.
        logs = [s.log_path.read_text() for s in servers]
        posts = [len(re.findall(r'"POST /api/runs/[^/]+/events/', log)) for log in logs]
        watched = [len(re.findall(r'"WSCONNECT /ws/runs/', log)) for log in logs]
        assert any(posts[i] and watched[1 - i] for i in (0, 1)), (posts, watched)

        # An admin form posted through nginx on its own port passes Django's CSRF Origin check
        # (the documented Host header keeps the port the browser's Origin names).
        assert admin_form_post(base, stack.session) == 200

        # The documented body limit: nginx answers 413 before a Daphne reads the body.
        status, _ = http_json_raw(f"{base}/api/runs/{run_ids['http']}/events/",
                                  b"x" * (1024 * 1024 + 1), stack.secret)
        assert status == 413
        # The documented access log writes paths, never query strings (where a token may be).
        status, _ = http_json_raw(f"{base}/api/runs/?token=secret-in-query", b"{}", "")
        log = (proxy.workdir / "contextadmin.access.log").read_text()
        assert "/api/runs/" in log and "secret-in-query" not in log
        assert stack.secret not in log
    finally:
        for inspector in inspectors:
            inspector.stop_flag.set()
            inspector.join(timeout=5)
        if proxy is not None:
            proxy.stop()
        stack.stop()
        redis.stop()


def http_json_raw(url: str, body: bytes, token: str) -> tuple[int, bytes]:
    """POST raw bytes (http_json encodes JSON) and return (status, body)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def admin_form_post(base: str, session: str) -> int:
    """An admin form (the password change, left empty: refused with its errors, nothing
    changed) posted as a browser posts it, with the CSRF cookie and token and the page's
    Origin; return the status (403 when the CSRF check refuses it)."""
    cookie = f"sessionid={session}"
    page = urllib.request.Request(f"{base}/admin/password_change/", headers={"Cookie": cookie})  # noqa: S310
    with urllib.request.urlopen(page, timeout=10) as response:  # noqa: S310 (loopback)
        html = response.read().decode()
        csrf_cookie = re.search(r"csrftoken=([^;]+)", response.headers["Set-Cookie"] or "")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert csrf_cookie and token, "the admin page set no CSRF cookie or token"
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token.group(1)}).encode()
    post = urllib.request.Request(  # noqa: S310
        f"{base}/admin/password_change/",
        data=form,
        method="POST",
        headers={
            "Cookie": f"{cookie}; csrftoken={csrf_cookie.group(1)}",
            "Origin": base,
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    try:
        with urllib.request.urlopen(post, timeout=10) as response:  # noqa: S310 (loopback)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
