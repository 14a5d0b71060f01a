"""Limits: body size, events per batch, runs and sockets per token, and the per-token rate limit.

Each refusal is a clear 4xx (413, 400 or 429) naming the limit, and stores nothing.
"""

from __future__ import annotations

import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from runs import ratelimit
from runs.models import Run, RunEvent
from runs.tokens import api_token_create
from tests.runs.conftest import Api
from tests.security.conftest import db_state

EVENT = {"type": "agent_text", "agent": "InterviewAgent", "text": "hello"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(ratelimit.local_buckets, "clock", fake)
    return fake


# -- request body size ---------------------------------------------------------------------------
@pytest.mark.django_db
def test_bodies_over_the_limit_are_413_and_store_nothing(api: Api, settings):
    run_id = api.start()["run_id"]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    before = db_state()
    big_start = {"workflow": "Generator", "enterprise_id": "acme", "context": {"x": "y" * 20_000}}
    big_batch = {"events": [{**EVENT, "text": "y" * 20_000}]}
    for path, body in (("/api/runs/", big_start), (f"/api/runs/{run_id}/events/", big_batch)):
        response = api.post(path, body)
        assert response.status_code == 413, response.content
        assert response.json()["error"].startswith("body: ")
        assert "10000" in response.json()["error"]
    assert db_state() == before


@pytest.mark.django_db
def test_an_oversized_form_post_is_a_400_not_a_500(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    response = client.post("/admin/login/", {"username": "x" * 20_000, "password": "p"})
    assert response.status_code == 400


# -- events per batch ----------------------------------------------------------------------------
@pytest.mark.django_db
def test_batches_over_api_max_events_per_batch_are_refused_whole(api: Api, settings):
    settings.API_MAX_EVENTS_PER_BATCH = 5
    run_id = api.start()["run_id"]
    response = api.events(run_id, [EVENT] * 6)
    assert response.status_code == 400
    assert response.json()["error"] == (
        "events: 6 events in one batch, at most 5 (API_MAX_EVENTS_PER_BATCH)"
    )
    assert RunEvent.objects.count() == 0
    assert api.events(run_id, [EVENT] * 5).status_code == 200


# -- running runs per token ----------------------------------------------------------------------
@pytest.mark.django_db
def test_running_runs_per_token_are_capped_until_one_ends(client, api: Api, settings):
    settings.API_MAX_RUNNING_RUNS_PER_TOKEN = 2
    first = api.start(run_id="r1")["run_id"]
    api.start(run_id="r2")
    before = db_state()
    response = api.post("/api/runs/", {"workflow": "Generator", "enterprise_id": "acme"})
    assert response.status_code == 429
    error = response.json()["error"]
    assert error.startswith("token: 2 of its runs have not ended, at most 2")
    assert "API_MAX_RUNNING_RUNS_PER_TOKEN" in error
    assert db_state() == before
    # a retried start of a run that exists is still answered
    assert api.post("/api/runs/", {"workflow": "Generator", "enterprise_id": "acme",
                                   "run_id": "r1"}).status_code == 200
    # a paused run still counts; another token has its own allowance
    fresh = {"workflow": "Generator", "enterprise_id": "a"}
    api.events(first, [{"type": "run_status", "status": "paused"}])
    assert api.post("/api/runs/", fresh).status_code == 429
    other = Api(client, api_token_create(name="other")[1])
    assert other.post("/api/runs/", fresh).status_code == 201
    # ending a run frees its place
    api.events(first, [{"type": "run_status", "status": "completed"}])
    assert api.post("/api/runs/", fresh).status_code == 201
    assert Run.objects.count() == 4


@pytest.mark.django_db
def test_zero_disables_the_running_runs_cap(api: Api, settings):
    settings.API_MAX_RUNNING_RUNS_PER_TOKEN = 0
    for _ in range(3):
        api.start()
    assert Run.objects.count() == 3


# -- rate limit ----------------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_token_over_its_rate_gets_429_with_retry_after(
    client, api: Api, staff_client, settings, clock
):
    run_id = api.start()["run_id"]  # one request
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    ratelimit.reset()
    state = f"/api/runs/{run_id}/state/"
    assert [api.get(state).status_code for _ in range(3)] == [200, 200, 200]
    before = db_state()
    for response in (api.get(state), api.events(run_id, [EVENT])):
        assert response.status_code == 429
        assert response["Retry-After"] == "20"  # one request back every 60/3 s
        body = response.json()
        assert body["retry_after"] == 20
        assert "3 requests a minute (API_RATE_LIMIT_PER_MINUTE)" in body["error"]
    assert db_state() == before, "a throttled request stores nothing"
    # other tokens and staff sessions are not affected; the export API counts too
    other = Api(client, api_token_create(name="other")[1])
    assert other.get(state).status_code == 200
    assert staff_client.get(state).status_code == 200
    assert api.get("/api/workflows/Generator/context_variables.json").status_code == 429
    # the bucket refills at the per-minute pace
    clock.now += 19
    assert api.get(state).status_code == 429
    clock.now += 1
    assert api.get(state).status_code == 200
    assert api.get(state).status_code == 429


def test_the_default_rate_leaves_the_benchmark_pace_alone(settings, clock):
    """5,000 events/s in batches of 100 is 50 requests/s: never throttled, for two minutes."""
    from django.conf import settings as live

    assert live.API_RATE_LIMIT_PER_MINUTE >= 50 * 60 * 10  # ten times the benchmark pace
    for _ in range(50 * 120):
        assert ratelimit.request_allow(key="token:bench").allowed
        clock.now += 1 / 50


def test_the_bucket_allows_a_burst_of_a_minute_then_the_per_minute_pace(settings, clock):
    settings.API_RATE_LIMIT_PER_MINUTE = 120
    assert all(ratelimit.request_allow(key="token:1").allowed for _ in range(120))
    refused = ratelimit.request_allow(key="token:1")
    assert (refused.allowed, refused.retry_after, refused.limit) == (False, 1, 120)
    clock.now += 0.5  # two a second
    assert ratelimit.request_allow(key="token:1").allowed
    assert not ratelimit.request_allow(key="token:1").allowed
    settings.API_RATE_LIMIT_PER_MINUTE = 0  # disabled
    assert all(ratelimit.request_allow(key="token:1").allowed for _ in range(1000))


# -- sockets per token, and socket connects under the rate limit -------------------------------
def _socket_setup():
    from contextadmin.services import workflow_import
    from runs import tokens
    from runs.services import lifecycle
    from tests.runs.conftest import demo_config

    workflow_import(name="Generator", data=demo_config())
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    return run.pk, tokens.api_token_create(name="rt")[1], tokens.api_token_create(name="b")[1]


async def _ingest(run_id: str, secret: str) -> tuple[WebsocketCommunicator, bool, dict | None]:
    from contextadmin.asgi import application

    comm = WebsocketCommunicator(application, f"/ws/ingest/{run_id}/?token={secret}")
    connected, _ = await comm.connect()
    if not connected:
        return comm, False, None
    message = None if await comm.receive_nothing(timeout=0.1) else await comm.receive_json_from()
    return comm, True, message


@pytest.mark.django_db(transaction=True)
async def test_ingest_sockets_per_token_are_capped(settings):
    settings.API_MAX_SOCKETS_PER_TOKEN = 2
    run_id, secret, other_secret = await sync_to_async(_socket_setup)()
    first, _, message = await _ingest(run_id, secret)
    second, _, _ = await _ingest(run_id, secret)
    assert message is None
    third, _, refusal = await _ingest(run_id, secret)
    assert refusal["status"] == 429
    assert refusal["error"] == (
        "token: 2 ingest sockets already open, at most 2 (API_MAX_SOCKETS_PER_TOKEN); "
        "close one first"
    )
    assert (await third.receive_output(timeout=1))["code"] == 4429
    other, _, message = await _ingest(run_id, other_secret)
    assert message is None, "another token has its own allowance"
    await first.disconnect()
    fourth, _, message = await _ingest(run_id, secret)
    assert message is None, "closing a socket frees its place"
    await fourth.send_json_to(EVENT)
    assert (await fourth.receive_json_from(timeout=5))["type"] == "ack"
    for comm in (second, other, fourth):
        await comm.disconnect()
    assert ratelimit.socket_slots._open == {}, "every closed socket gave its place back"


@pytest.mark.django_db(transaction=True)
async def test_ingest_socket_connects_count_against_the_rate_limit(settings):
    run_id, secret, _ = await sync_to_async(_socket_setup)()
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    first, _, message = await _ingest(run_id, secret)
    assert message is None
    second, _, refusal = await _ingest(run_id, secret)
    assert refusal["status"] == 429 and refusal["retry_after"] == 60
    assert "API_RATE_LIMIT_PER_MINUTE" in refusal["error"]
    assert (await second.receive_output(timeout=1))["code"] == 4429
    # messages on an open socket are not throttled (each waits for its commit)
    for _ in range(5):
        await first.send_json_to(EVENT)
        assert (await first.receive_json_from(timeout=5))["type"] == "ack"
    await first.disconnect()


# -- the Redis-backed bucket: several processes share one budget --------------------------------
@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    from devservers.processes import Redis

    server = Redis(tmp_path_factory.mktemp("redis")).start()
    yield server.url, server
    server.stop()


@pytest.mark.redis
def test_processes_sharing_redis_share_the_bucket(redis_url, settings, caplog):
    url, _ = redis_url
    settings.REDIS_URL = url
    settings.API_RATE_LIMIT_PER_MINUTE = 5
    process_a, process_b = ratelimit.RedisBuckets(url), ratelimit.RedisBuckets(url)
    assert [process_a.take("token:shared", per_minute=5).allowed for _ in range(3)] == [True] * 3
    assert [process_b.take("token:shared", per_minute=5).allowed for _ in range(2)] == [True] * 2
    refused = process_a.take("token:shared", per_minute=5)
    assert (refused.allowed, refused.retry_after) == (False, 12)
    assert not process_b.take("token:shared", per_minute=5).allowed
    assert process_a.take("token:other", per_minute=5).allowed
    # request_allow goes through Redis when REDIS_URL is set
    assert not ratelimit.request_allow(key="token:shared").allowed
    assert not caplog.records


@pytest.mark.redis
def test_a_redis_outage_falls_back_to_the_process_bucket(settings, caplog):
    from devservers.processes import free_port

    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    decisions = [ratelimit.request_allow(key="token:x").allowed for _ in range(3)]
    assert decisions == [True, True, False]
    warnings = [r.getMessage() for r in caplog.records if r.name == "runs.ratelimit"]
    assert len(warnings) == 1 and "Redis unavailable" in warnings[0]


@pytest.mark.redis
def test_a_silent_redis_costs_one_request_its_timeout_not_every_request(settings, monkeypatch):
    """A Redis that accepts connections but never answers: the first request waits the
    limiter's timeout, the next ones (within REDIS_PAUSE_S) use the process's bucket at once;
    after the pause Redis is asked again."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # accepts (the kernel does), never reads or answers
    try:
        settings.REDIS_URL = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        settings.API_RATE_LIMIT_PER_MINUTE = 100
        took = []
        for _ in range(5):
            started = time.monotonic()
            assert ratelimit.request_allow(key="token:silent").allowed
            took.append(time.monotonic() - started)
        assert took[0] >= ratelimit.REDIS_TIMEOUT_S * 0.9
        assert max(took[1:]) < 0.05, took
        monkeypatch.setattr(ratelimit, "_redis_paused_until", time.monotonic())  # pause over
        started = time.monotonic()
        assert ratelimit.request_allow(key="token:silent").allowed
        assert time.monotonic() - started >= ratelimit.REDIS_TIMEOUT_S * 0.9  # asked again
    finally:
        listener.close()


def test_retry_after_header_reaches_the_runtime_client():
    """The runtime client retries 429 (with backoff) instead of failing the run."""
    from contextadmin_sdk.client.transport import RETRYABLE_STATUSES

    assert 429 in RETRYABLE_STATUSES

