"""A dependency is down: MongoDB at run start, Redis during a run.

MongoDB: the run still starts, within the configured ``MONGODB_TIMEOUT_MS``; its database
variables are ``unresolved`` with the reason, in the API answer and in the inspector's snapshot.
Redis: ingest still commits and answers; the failed broadcasts are logged; inspectors cannot
stay connected while it is down, and once it is back they resume with ``?after=`` and get every
event exactly once.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from contextadmin.asgi import application
from devservers.processes import Redis
from runs import mongo as runs_mongo
from runs import tokens
from tests.reliability.helpers import (
    Inspector,
    RecordingReporter,
    demo_config,
    http_json,
    varied_events,
    wait_until,
)

TIMEOUT_MS = 500
DATABASE_VARIABLE = "concept_overview"  # the demo workflow's one database variable


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections (the kernel's backlog) and never says a word."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


@pytest.fixture
def closed_port() -> int:
    """A port nobody listens on (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _staff_session() -> str:
    user = get_user_model().objects.create_user("op", password="pw-12345678", is_staff=True)
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def _snapshot(run_id: str, session: str) -> dict:
    comm = WebsocketCommunicator(
        application,
        f"/ws/runs/{run_id}/",
        headers=[(b"origin", b"http://testserver"), (b"cookie", f"sessionid={session}".encode())],
    )
    connected, _ = await comm.connect()
    assert connected
    snapshot = json.loads(await comm.receive_from(timeout=5))
    await comm.disconnect()
    return snapshot


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mongo_kind", ["silent", "refused"])
def test_run_starts_within_the_mongodb_timeout_with_unresolved_database_variables(
    mongo_kind, request, settings, client
):
    from contextadmin.services import workflow_import

    port = request.getfixturevalue(f"{'silent' if mongo_kind == 'silent' else 'closed'}_port")
    uri = f"mongodb://127.0.0.1:{port}/"
    settings.MONGODB_URI = uri
    settings.MONGODB_TIMEOUT_MS = TIMEOUT_MS
    workflow_import(name="Generator", data=demo_config())
    _, secret = tokens.api_token_create(name="rt")
    session = _staff_session()
    try:
        started = time.monotonic()
        response = client.post(
            "/api/runs/",
            data=json.dumps({"workflow": "Generator", "enterprise_id": "acme"}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {secret}",
        )
        elapsed = time.monotonic() - started
    finally:
        mongo_client = runs_mongo._mongo_clients.pop(settings.MONGODB_URI, None)
        if mongo_client is not None:
            mongo_client.close()
    assert response.status_code == 201, response.content
    # One bounded wait for the whole look-up (not one per variable or group), plus overhead.
    assert elapsed < TIMEOUT_MS / 1000 + 1.5, f"run start took {elapsed:.2f}s"
    body = response.json()
    provenance = body["state"]["provenance"][DATABASE_VARIABLE]
    assert provenance["status"] == "unresolved"
    assert provenance["category"] == "database"
    assert provenance["reason"].startswith("MongoDB unreachable"), provenance
    assert DATABASE_VARIABLE not in body["state"]["state"]["context"]

    snapshot = async_to_sync(_snapshot)(body["run_id"], session)
    assert snapshot["type"] == "snapshot"
    assert snapshot["provenance"][DATABASE_VARIABLE] == provenance


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.parametrize("redis_layer", ["pubsub", "lists"])
def test_redis_outage_ingest_commits_and_inspectors_resync_when_it_returns(
    sqlite_stack, tmp_path, redis_layer
):
    """With the pub/sub layer (the default) the inspector's socket stays open through the
    outage and refills from the log; with "lists" the consumer dies with its Redis read and
    the page reconnects with ?after=. Either way it ends with every event once, in order."""
    per_phase = 20
    total = 3 * per_phase
    redis = Redis(workdir=tmp_path).start()
    inspector: Inspector | None = None
    try:
        stack = sqlite_stack
        server = stack.start_daphne(REDIS_URL=redis.url, REDIS_CHANNEL_LAYER=redis_layer)
        reporter = RecordingReporter(server.url, stack.secret, batch_size=5, flush_interval=60)
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        inspector = Inspector(
            lambda: server.ws_url, run_id, stack.session, until=total, deadline_s=60
        )
        inspector.start()
        assert inspector.connected.wait(10)
        events = varied_events(total)

        for event in events[:per_phase]:
            reporter.event(**event)
        reporter.flush()
        assert wait_until(lambda: inspector.last_seq == per_phase, timeout=10), inspector.seqs[-3:]

        redis.stop()  # Redis down: the events are still committed and acknowledged
        started = time.monotonic()
        for event in events[per_phase : 2 * per_phase]:
            reporter.event(**event)
        reporter.flush()
        assert time.monotonic() - started < 5
        assert reporter.last_acked_seq == 2 * per_phase
        status, state = http_json(
            "GET", f"{server.url}/api/runs/{run_id}/state/", token=stack.secret
        )
        assert status == 200 and state["seq"] == 2 * per_phase
        # "broadcast to run.<id>[, runs] failed (why); inspectors will resync from the log", one
        # line: an outage is not a traceback per failed broadcast
        assert re.search(rf"broadcast to [^\n]*run\.{run_id}\b[^\n]* failed \(", stack.logs())
        lines = stack.logs().splitlines()
        after = [lines[i + 1] for i, line in enumerate(lines[:-1]) if "broadcast to " in line]
        assert not [line for line in after if line.startswith("Traceback")], after
        time.sleep(0.5)
        assert inspector.last_seq == per_phase  # no way to hear of them while Redis is down

        redis = Redis(workdir=tmp_path, port=redis.port).start()  # back, empty, same address
        for event in events[2 * per_phase :]:
            reporter.event(**event)
        reporter.close()
        inspector.finish(timeout=30)
        assert inspector.errors == []
        assert inspector.seqs == list(range(1, total + 1))
        if redis_layer == "pubsub":
            assert inspector.connects == 1  # the socket rode the outage out
        else:
            assert inspector.connects >= 2
            assert inspector.failed_connects >= 1  # it retried while Redis was down
    finally:
        if inspector is not None:
            inspector.stop_flag.set()
            inspector.join(timeout=5)
        redis.stop()


@pytest.mark.slow
@pytest.mark.redis
def test_a_redis_that_never_answers_holds_ingest_at_most_the_broadcast_timeout(
    sqlite_stack, silent_port
):
    """A Redis host that drops packets (no refusal) would hold each broadcast for the client's
    socket timeouts (tens of seconds) while the request waits. Broadcasts are bounded
    (``BROADCAST_TIMEOUT_S``) and pause after a failure, so ingest keeps answering promptly."""
    from runs.services.broadcast import BROADCAST_TIMEOUT_S

    stack = sqlite_stack
    server = stack.start_daphne(REDIS_URL=f"redis://127.0.0.1:{silent_port}/0")
    bound = BROADCAST_TIMEOUT_S + 2.0  # plus the rate limiter's own Redis timeout and overhead
    started = time.monotonic()
    status, body = http_json(
        "POST",
        f"{server.url}/api/runs/",
        {"workflow": "Generator", "enterprise_id": "acme"},
        token=stack.secret,
        timeout=30,
    )
    assert status == 201, body
    assert time.monotonic() - started < bound
    run_id = body["run_id"]
    for index, event in enumerate(varied_events(4)):
        started = time.monotonic()
        status, answer = http_json(
            "POST",
            f"{server.url}/api/runs/{run_id}/events/",
            {"events": [event]},
            token=stack.secret,
            timeout=30,
        )
        assert status == 200 and answer["last_seq"] == index + 1, answer
        took = time.monotonic() - started
        assert took < bound, f"ingest {index + 1} waited {took:.1f}s on Redis"
        time.sleep(0.5)  # spread over a broadcast pause, so sends are tried again
    assert "broadcast to " in stack.logs()
