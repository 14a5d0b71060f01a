"""``POST /api/runs/<run_id>/events/`` under ASGI: on its own path (runs/events_asgi.py, the
request-pure middleware and the same async view, authentication in one shared thread), its
broadcasts sent from the event loop; and the same answers as through Django's handler."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator, WebsocketCommunicator
from django.db import DatabaseError, connection, transaction

from contextadmin.asgi import application
from runs import tokens
from runs.db import pool_sync_to_async
from runs.models import RunEvent
from runs.services import broadcast, ingest, lifecycle
from tests.support.demo import demo_config

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EVENT = {"type": "agent_text", "agent": "InterviewAgent", "text": "hello"}
JSON = "application/json"


def _setup() -> str:
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())
    workflow_import(name="Other", data=demo_config())
    return tokens.api_token_create(name="rt")[1]


def _scoped_token() -> str:
    from contextadmin.models import Workflow

    return tokens.api_token_create(name="other", workflow=Workflow.objects.get(name="Other"))[1]


def _run(run_id: str) -> None:
    lifecycle.run_start(workflow_name="Generator", enterprise_id="acme", run_id=run_id)


async def call(
    app: Any,
    path: str,
    body: bytes,
    *,
    secret: str | None,
    content_type: str = JSON,
    method: str = "POST",
    extra: list[tuple[bytes, bytes]] | None = None,
) -> dict[str, Any]:
    headers = [(b"host", b"testserver"), *(extra or [])]
    if content_type:
        headers.append((b"content-type", content_type.encode()))
    if secret is not None:
        headers.append((b"authorization", f"Bearer {secret}".encode()))
    headers.append((b"content-length", str(len(body)).encode()))
    communicator = HttpCommunicator(app, method, path, body=body, headers=headers)
    return await communicator.get_response(timeout=10)


def _headers(response: dict[str, Any]) -> dict[str, str]:
    return {k.decode().lower(): v.decode() for k, v in response["headers"]}


def batch(*seqs: int, text: str = "hello") -> bytes:
    return json.dumps({"events": [{**EVENT, "seq": seq, "text": text} for seq in seqs]}).encode()


# (name, body, token: "good" | "bad" | "none" | "scoped", content type, run exists, status)
CASES = [
    ("a batch is stored", batch(1, 2), "good", JSON, True, 200),
    (
        "an event without seq gets the next",
        json.dumps({"events": [EVENT]}).encode(),
        "good",
        JSON,
        True,
        200,
    ),
    ("charset in the content type", batch(1), "good", "application/json; charset=utf-8", True, 200),
    ("no content type is JSON", batch(1), "good", "", True, 200),
    ("a gap is 409", batch(3), "good", JSON, True, 409),
    ("no token is 401", batch(1), "none", JSON, True, 401),
    ("a wrong token is 401", batch(1), "bad", JSON, True, 401),
    ("a run of another workflow is 404, as an unknown run", batch(1), "scoped", JSON, True, 404),
    ("a form body is 415", b"events=1", "good", "application/x-www-form-urlencoded", True, 415),
    ("broken JSON is 400", b'{"events": [', "good", JSON, True, 400),
    ("a JSON array is 400", b"[]", "good", JSON, True, 400),
    ("an unknown field is 400", b'{"events": [], "x": 1}', "good", JSON, True, 400),
    ("no events field is 400", b"{}", "good", JSON, True, 400),
    (
        "a NUL in a text is 400",
        b'{"events": [{"type": "agent_text", "text": "\\u0000"}]}',
        "good",
        JSON,
        True,
        400,
    ),
    ("a bad event names its field", b'{"events": [{"type": "nope"}]}', "good", JSON, True, 400),
    ("an unknown run is 404", batch(1), "good", JSON, False, 404),
]


@pytest.mark.parametrize(
    ("name", "body", "who", "content_type", "exists", "status"), CASES, ids=[c[0] for c in CASES]
)
async def test_answers_with_the_middleware_s_headers(name, body, who, content_type, exists, status):
    secret = await sync_to_async(_setup)()
    secrets = {"good": secret, "bad": "ca_0000aaaa_" + "x" * 40, "none": None}
    secrets["scoped"] = await sync_to_async(_scoped_token)()
    run_id = "run-1" if exists else "nope"
    if exists:
        await sync_to_async(_run)(run_id)
    response = await call(
        application,
        f"/api/runs/{run_id}/events/",
        body,
        secret=secrets[who],
        content_type=content_type,
    )
    stored = await sync_to_async(lambda: sorted(RunEvent.objects.values_list("seq", flat=True)))()
    answer = json.loads(response["body"])
    headers = _headers(response)
    assert response["status"] == status, answer
    assert headers["content-type"] == JSON
    # Django's middleware ran: SecurityMiddleware's and XFrameOptionsMiddleware's headers.
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    if status >= 400:
        assert answer["error"] and stored == []
    else:
        assert answer["last_seq"] == len(stored) and stored


async def test_a_body_over_the_limit_is_413(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    body = batch(1, text="y" * 2_000)
    response = await call(application, "/api/runs/run-1/events/", body, secret=secret)
    assert response["status"] == 413
    assert json.loads(response["body"])["error"] == f"body: {len(body)} bytes, at most 1000"
    # Without a Content-Length the body is read up to one byte over the limit, then refused.
    communicator = HttpCommunicator(
        application,
        "POST",
        "/api/runs/run-1/events/",
        body=body,
        headers=[(b"host", b"testserver"), (b"authorization", f"Bearer {secret}".encode())],
    )
    response = await communicator.get_response(timeout=10)
    assert response["status"] == 413
    assert json.loads(response["body"])["error"] == "body: more than 1000 bytes"
    assert await sync_to_async(RunEvent.objects.count)() == 0


async def test_a_rate_limited_token_gets_429_with_retry_after(settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    statuses = []
    for seq in (1, 2, 3):
        response = await call(application, "/api/runs/run-1/events/", batch(seq), secret=secret)
        statuses.append(response["status"])
    assert statuses == [200, 200, 429]
    assert int(_headers(response)["retry-after"]) >= 1
    assert "API_RATE_LIMIT_PER_MINUTE" in json.loads(response["body"])["error"]
    assert await sync_to_async(RunEvent.objects.count)() == 2


async def test_an_inspector_gets_the_events_posted():
    from django.contrib.auth import get_user_model
    from django.test import Client

    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")

    def login() -> str:
        user = get_user_model().objects.create_user("op", password="pw-12345678", is_staff=True)
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    session = await sync_to_async(login)()
    inspector = WebsocketCommunicator(
        application,
        "/ws/runs/run-1/",
        headers=[(b"origin", b"http://testserver"), (b"cookie", f"sessionid={session}".encode())],
    )
    assert (await inspector.connect())[0]
    assert json.loads(await inspector.receive_from(timeout=5))["type"] == "snapshot"
    response = await call(application, "/api/runs/run-1/events/", batch(1, 2), secret=secret)
    assert response["status"] == 200
    seqs = [json.loads(await inspector.receive_from(timeout=5))["seq"] for _ in range(2)]
    assert seqs == [1, 2]
    await inspector.disconnect()


async def test_other_methods_and_hosts_are_refused():
    secret = await sync_to_async(_setup)()
    response = await call(application, "/api/runs/run-1/events/", b"", secret=secret, method="PUT")
    assert response["status"] == 405  # GET reads the log (tests/runs/test_export_import.py)
    assert _headers(response)["allow"] == "GET, HEAD, POST"
    assert json.loads(response["body"])["error"].startswith("method PUT not allowed")
    response = await call(
        application, "/api/runs/run-1/events/", batch(1), secret=secret, extra=[(b"host", b"evil")]
    )
    assert response["status"] == 400  # DisallowedHost: Django reads "testserver,evil"
    for host in (b"evil.example", b"testserver:x"):
        communicator = HttpCommunicator(
            application, "POST", "/api/runs/run-1/events/", body=batch(1), headers=[(b"host", host)]
        )
        assert (await communicator.get_response(timeout=10))["status"] == 400


# -- kept connections ----------------------------------------------------------------------
def _connection_id() -> int:
    connection.ensure_connection()
    return id(connection.connection)


async def test_a_pool_thread_keeps_its_connection_between_calls():
    await sync_to_async(_setup)()
    ids = {await pool_sync_to_async(_connection_id)() for _ in range(30)}
    assert len(ids) <= 6  # at most one per pool thread, not one per call


def _open_transaction_and_leave() -> int:
    connection_id = _connection_id()
    transaction.set_autocommit(False)
    return connection_id


_failed_connections: list[Any] = []


def _broken() -> None:
    """A database error that may leave the connection broken (not a data/integrity error)."""
    connection.ensure_connection()
    _failed_connections.append(connection.connection)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table")


def _current_connection() -> Any:
    connection.ensure_connection()
    return connection.connection


def _state() -> tuple[bool, bool]:
    return connection.connection is not None, connection.get_autocommit()


async def test_a_connection_left_in_a_transaction_or_broken_is_closed():
    await sync_to_async(_setup)()
    call_in_pool = pool_sync_to_async
    await call_in_pool(_open_transaction_and_leave)()
    # Every pool thread's connection is open and in autocommit mode (no transaction carried).
    for _ in range(12):
        _, autocommit = await call_in_pool(_state)()
        assert autocommit, "a kept connection carried an open transaction into the next call"
    with pytest.raises(DatabaseError):
        await call_in_pool(_broken)()
    for _ in range(12):  # every thread gets a working connection, never the one that failed
        assert await call_in_pool(_current_connection)() is not _failed_connections[-1]
    assert await sync_to_async(RunEvent.objects.count)() == 0


async def test_an_unexpected_failure_is_a_json_500_logged_with_its_traceback(monkeypatch, caplog):
    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")

    def fail(**kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ingest, "events_ingest_many", fail)  # what the group commit calls
    response = await call(application, "/api/runs/run-1/events/", batch(1), secret=secret)
    assert response["status"] == 500
    assert "retry" in json.loads(response["body"])["error"]
    errors = [r for r in caplog.records if r.name == "django.request" and r.levelname == "ERROR"]
    assert len(errors) == 1 and errors[0].exc_info and "disk on fire" in str(errors[0].exc_info[1])
    assert await sync_to_async(RunEvent.objects.count)() == 0


async def test_ingest_from_async_code_collects_its_broadcasts_for_the_caller_to_send():
    """broadcasts_collected: the worker thread sends nothing itself (no hop back into the loop);
    the async caller sends what was committed, in order, with broadcasts_send."""
    from channels.layers import get_channel_layer

    await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    layer = get_channel_layer()
    member = await layer.new_channel()
    await layer.group_add(broadcast.run_group("run-1"), member)
    with broadcast.broadcasts_collected() as collected:
        await pool_sync_to_async(ingest.event_ingest)(
            run_id="run-1", events=[{**EVENT, "seq": 1}, {**EVENT, "seq": 2}]
        )
    assert [group for group, _ in collected] == [broadcast.run_group("run-1"), broadcast.RUNS_GROUP]
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await layer.receive(member)  # nothing was sent from the thread
    await broadcast.broadcasts_send(collected)
    message = await layer.receive(member)
    assert [seq for seq, _ in message["items"]] == [1, 2]


async def test_an_event_post_reaches_an_inspector_group_before_its_answer():
    from channels.layers import get_channel_layer

    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    layer = get_channel_layer()
    member = await layer.new_channel()
    await layer.group_add(broadcast.run_group("run-1"), member)
    response = await call(application, "/api/runs/run-1/events/", batch(1), secret=secret)
    assert response["status"] == 200
    async with asyncio.timeout(0):  # already delivered when the answer came
        message = await layer.receive(member)
    assert [seq for seq, _ in message["items"]] == [1]


async def test_concurrent_posts_for_many_runs_share_commits_and_each_gets_its_own_answer(
    monkeypatch,
):
    """Twelve runtimes post at once: their batches share the group commit's transactions, each
    gets the answer it would get alone, and the two bad batches among them fail alone."""
    import time

    secret = await sync_to_async(_setup)()
    run_ids = [f"run-{i}" for i in range(12)]
    for run_id in run_ids:
        await sync_to_async(_run)(run_id)
    rounds: list[list[str]] = []
    original = ingest.events_ingest_many

    def recorded(*, requests):
        rounds.append([r.run_id for r in requests])
        if len(rounds) == 1:
            time.sleep(0.3)  # a slow first commit: the others queue for the next round
        return original(requests=requests)

    monkeypatch.setattr(ingest, "events_ingest_many", recorded)
    bodies = {run_id: batch(1, 2, 3, text=run_id) for run_id in run_ids}
    bodies["run-10"] = batch(5, text="run-10")  # a gap: 409
    bodies["run-11"] = json.dumps(
        {"events": [{**EVENT, "seq": 1}, {"type": "agent_text", "agent": 7}]}
    ).encode()  # a bad second event: 400, the first not stored either
    responses = await asyncio.gather(
        *(call(application, f"/api/runs/{r}/events/", bodies[r], secret=secret) for r in run_ids)
    )
    answers = {
        r: (resp["status"], json.loads(resp["body"]))
        for r, resp in zip(run_ids, responses, strict=True)
    }

    assert sorted(len(group) for group in rounds)[-1] > 1, rounds  # transactions were shared
    assert sorted(r for group in rounds for r in group) == sorted(run_ids)  # each in one round
    for run_id in run_ids[:10]:
        status, body = answers[run_id]
        assert status == 200 and body["last_seq"] == 3, (run_id, body)
        assert [a["seq"] for a in body["acks"]] == [1, 2, 3]
        assert not any(a.get("duplicate") for a in body["acks"])
    assert answers["run-10"][0] == 409 and "seq" in answers["run-10"][1]["error"]
    assert answers["run-11"][0] == 400 and answers["run-11"][1]["error"].startswith("events[1]")

    def stored() -> dict[str, list[str]]:
        texts: dict[str, list[str]] = {r: [] for r in run_ids}
        for run_id, text in RunEvent.objects.order_by("seq").values_list("run_id", "payload__text"):
            texts[run_id].append(text)
        return texts

    texts = await sync_to_async(stored)()
    assert all(texts[r] == [r] * 3 for r in run_ids[:10]), texts
    assert texts["run-10"] == [] and texts["run-11"] == []
    # A retry of a whole batch (its answer lost) is acknowledged as duplicates, stored once.
    again = await call(application, "/api/runs/run-3/events/", bodies["run-3"], secret=secret)
    acks = json.loads(again["body"])["acks"]
    assert again["status"] == 200 and all(a["duplicate"] for a in acks)
    assert (await sync_to_async(stored)())["run-3"] == ["run-3"] * 3


async def test_a_post_gives_its_connection_back_before_waiting_for_the_commit(monkeypatch):
    """The request's thread returns its database connection (to the pool, on PostgreSQL)
    before the POST waits for the group commit: waiting POSTs hold none."""
    from runs import api

    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    seen: list[bool] = []
    original = api.events_post_read

    def read(request):
        answer = original(request)
        seen.append(connection.connection is None)  # in the request's own thread
        return answer

    monkeypatch.setattr(api, "_events_post_read_in_thread", sync_to_async(read))
    response = await call(application, "/api/runs/run-1/events/", batch(1), secret=secret)
    assert response["status"] == 200 and seen == [True]


# -- the events POST's own ASGI path (runs/events_asgi.py) against Django's handler --------------
def _comparable(response: dict[str, Any], run_id: str) -> tuple[int, Any, dict[str, str]]:
    headers = _headers(response)
    assert headers.pop("content-length") == str(len(response["body"]))  # differs with the id
    body = json.loads(response["body"].decode().replace(run_id, "<run>"))
    if isinstance(body, dict) and "acks" in body:
        body["acks"] = len(body["acks"])
    return response["status"], body, headers


@pytest.mark.parametrize(
    ("name", "body", "who", "content_type", "exists", "status"), CASES, ids=[c[0] for c in CASES]
)
async def test_the_events_path_answers_as_django_s_handler(
    name, body, who, content_type, exists, status
):
    from contextadmin.asgi import django_asgi_app

    secret = await sync_to_async(_setup)()
    secrets = {"good": secret, "bad": "ca_0000aaaa_" + "x" * 40, "none": None}
    secrets["scoped"] = await sync_to_async(_scoped_token)()
    answers = []
    for app, run_id in ((django_asgi_app, "run-django"), (application, "run-asgi")):
        if exists:
            await sync_to_async(_run)(run_id)
        path = f"/api/runs/{run_id if exists else 'nope'}/events/"
        response = await call(app, path, body, secret=secrets[who], content_type=content_type)
        answers.append(_comparable(response, run_id))
    assert answers[0] == answers[1]
    assert answers[1][0] == status


async def test_the_edge_middleware_are_the_settings_but_the_skipped(settings):
    from runs.events_asgi import EDGE_MIDDLEWARE, SKIPPED

    assert [name for name in settings.MIDDLEWARE if name not in SKIPPED] == list(EDGE_MIDDLEWARE)
    assert set(SKIPPED) <= set(settings.MIDDLEWARE)


async def test_only_django_s_own_receivers_listen_to_the_request_signals():
    """The events path does not send request_started/request_finished (runs/events_asgi.py):
    a receiver another app connects would not run for a POST, so adding one must be decided."""
    from django.core import signals
    from django.core.cache import close_caches
    from django.core.handlers.base import reset_urlconf
    from django.db import close_old_connections, reset_queries

    own = {
        signals.request_started: (reset_queries, close_old_connections),
        signals.request_finished: (close_old_connections, close_caches, reset_urlconf),
    }
    taken: list[tuple[Any, Any]] = []
    try:
        for signal, receivers in own.items():
            for receiver in receivers:
                assert signal.disconnect(receiver), receiver
                taken.append((signal, receiver))
            assert not signal.has_listeners()
    finally:
        for signal, receiver in taken:
            signal.connect(receiver)


@pytest.mark.parametrize(
    ("name", "path", "extra", "status"),
    [
        ("a NUL in the run id", "/api/runs/a%00b/events/", [], 400),
        ("a host not allowed", "/api/runs/run-1/events/", [(b"host", b"evil.example")], 400),
    ],
)
async def test_the_edge_middleware_refuse_on_the_events_path(name, path, extra, status):
    from contextadmin.asgi import django_asgi_app

    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    statuses = []
    for app in (django_asgi_app, application):
        headers = [
            (b"content-type", JSON.encode()),
            (b"authorization", f"Bearer {secret}".encode()),
        ]
        headers += extra or [(b"host", b"testserver")]
        scope_path = path.replace("%00", "\x00")
        communicator = HttpCommunicator(app, "POST", scope_path, body=batch(1), headers=headers)
        answer = await communicator.get_response(timeout=10)
        statuses.append((answer["status"], answer["body"], _headers(answer)))
    assert statuses[0] == statuses[1]  # the same answer, body and headers, through both paths
    assert statuses[0][0] == status
    assert await sync_to_async(RunEvent.objects.count)() == 0


async def test_an_unexpected_error_is_logged_and_answered_with_json_500(monkeypatch, caplog):
    from runs import api

    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")

    async def broken(**kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(api, "event_ingest_grouped", broken)
    with caplog.at_level("ERROR", logger="django.request"):
        response = await call(application, "/api/runs/run-1/events/", batch(1), secret=secret)
    assert response["status"] == 500
    assert json.loads(response["body"]) == {"error": api.SERVER_ERROR}
    assert any(r.exc_info and "disk on fire" in str(r.exc_info[1]) for r in caplog.records)


async def test_concurrent_posts_share_one_thread_instead_of_one_each(monkeypatch):
    """Django's handler runs each request in a thread of its own; under a thousand runtimes
    those threads contend for the GIL. The events path authenticates in one shared thread."""
    import threading

    from contextadmin.asgi import django_asgi_app
    from runs import api

    secret = await sync_to_async(_setup)()
    threads: set[int] = set()
    authenticate = api.authenticate

    def recorded(**kwargs: Any) -> Any:
        threads.add(threading.get_ident())
        return authenticate(**kwargs)

    monkeypatch.setattr(api, "authenticate", recorded)
    seen = {}
    for app, prefix in ((django_asgi_app, "d"), (application, "a")):
        threads.clear()
        run_ids = [f"{prefix}-{i}" for i in range(20)]
        for run_id in run_ids:
            await sync_to_async(_run)(run_id)
        answers = await asyncio.gather(
            *(
                call(app, f"/api/runs/{run_id}/events/", batch(1), secret=secret)
                for run_id in run_ids
            )
        )
        assert [a["status"] for a in answers] == [200] * 20
        seen[prefix] = len(threads)
    assert seen["d"] > 1  # the baseline: Django's thread per request
    assert seen["a"] == 1


async def test_a_refused_post_is_logged_as_django_s_handler_logs_it(caplog):
    from contextadmin.asgi import django_asgi_app

    await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    lines = []
    for app in (django_asgi_app, application):
        caplog.clear()
        with caplog.at_level("WARNING", logger="django.request"):
            response = await call(app, "/api/runs/run-1/events/", batch(1), secret=None)
        assert response["status"] == 401
        lines.append(
            [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "django.request"]
        )
    assert lines[0] == lines[1] == [("WARNING", "Unauthorized: /api/runs/run-1/events/")]
