"""``POST /api/runs/<run_id>/events/`` under ASGI: the fast path (runs.events_http) answers
exactly as Django's view does, and every request Django would treat specially goes to Django."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator, WebsocketCommunicator
from django.db import connection, transaction

from contextadmin.asgi import application, django_asgi_app
from runs import services
from runs.db import kept_connection_sync_to_async
from runs.models import Run, RunEvent
from runs.routing import events_run_id
from tests.support.demo import demo_config

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

EVENT = {"type": "agent_text", "agent": "InterviewAgent", "text": "hello"}
JSON = "application/json"


def _setup() -> str:
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())
    workflow_import(name="Other", data=demo_config())
    return services.api_token_create(name="rt")[1]


def _scoped_token() -> str:
    from contextadmin.models import Workflow

    return services.api_token_create(name="other", workflow=Workflow.objects.get(name="Other"))[1]


def _run(run_id: str) -> None:
    services.run_start(workflow_name="Generator", enterprise_id="acme", run_id=run_id)


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


# (name, body, token: "good" | "bad" | "none" | "scoped", content type, run exists)
CASES = [
    ("a batch is stored", batch(1, 2), "good", JSON, True),
    (
        "an event without seq gets the next",
        json.dumps({"events": [EVENT]}).encode(),
        "good",
        JSON,
        True,
    ),
    ("charset in the content type", batch(1), "good", "application/json; charset=utf-8", True),
    ("no content type is JSON", batch(1), "good", "", True),
    ("a gap is 409", batch(3), "good", JSON, True),
    ("no token is 401", batch(1), "none", JSON, True),
    ("a wrong token is 401", batch(1), "bad", JSON, True),
    ("a token of another workflow is 403", batch(1), "scoped", JSON, True),
    ("a form body is 415", b"events=1", "good", "application/x-www-form-urlencoded", True),
    ("broken JSON is 400", b'{"events": [', "good", JSON, True),
    ("a JSON array is 400", b"[]", "good", JSON, True),
    ("an unknown field is 400", b'{"events": [], "x": 1}', "good", JSON, True),
    ("no events field is 400", b"{}", "good", JSON, True),
    (
        "a NUL in a text is 400",
        b'{"events": [{"type": "agent_text", "text": "\\u0000"}]}',
        "good",
        JSON,
        True,
    ),
    ("a bad event names its field", b'{"events": [{"type": "nope"}]}', "good", JSON, True),
    ("an unknown run is 404", batch(1), "good", JSON, False),
]


@pytest.mark.parametrize(
    ("name", "body", "who", "content_type", "exists"), CASES, ids=[c[0] for c in CASES]
)
async def test_the_fast_path_answers_as_django_does(name, body, who, content_type, exists):
    secret = await sync_to_async(_setup)()
    secrets = {"good": secret, "bad": "ca_0000aaaa_" + "x" * 40, "none": None}
    secrets["scoped"] = await sync_to_async(_scoped_token)()
    answers = {}
    for label, app in (("fast", application), ("django", django_asgi_app)):
        run_id = "run-1" if exists else "nope"
        if exists:
            await sync_to_async(_run)(run_id)
        path = f"/api/runs/{run_id}/events/"
        assert (
            events_run_id({"method": "POST", "path": path, "headers": [(b"host", b"testserver")]})
            is not None
        )
        response = await call(app, path, body, secret=secrets[who], content_type=content_type)
        stored = await sync_to_async(
            lambda: sorted(RunEvent.objects.values_list("seq", flat=True))
        )()
        answers[label] = (
            response["status"],
            json.loads(response["body"]),
            _headers(response),
            stored,
        )
        await sync_to_async(lambda: (RunEvent.objects.all().delete(), Run.objects.all().delete()))()
    fast, django = answers["fast"], answers["django"]
    assert fast[0] == django[0], (fast, django)
    assert fast[1] == django[1]
    assert fast[3] == django[3]  # the same events stored (or none)
    assert fast[2] == django[2]  # the same headers: content type and length, security headers
    if fast[0] >= 400:
        assert fast[1]["error"] and fast[3] == []


async def test_a_body_over_the_limit_is_413_on_both_paths(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    body = batch(1, text="y" * 2_000)
    for app in (application, django_asgi_app):
        response = await call(app, "/api/runs/run-1/events/", body, secret=secret)
        assert response["status"] == 413
        assert json.loads(response["body"])["error"] == f"body: {len(body)} bytes, at most 1000"
    # Without a Content-Length the body is read up to one byte over the limit, then refused.
    for app in (application, django_asgi_app):
        communicator = HttpCommunicator(
            app,
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


async def test_an_inspector_gets_the_events_posted_on_the_fast_path():
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


def _scope(**overrides: Any) -> dict[str, Any]:
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "path": "/api/runs/run-1/events/",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
    }
    return {**scope, **overrides}


ROUTES = [
    ("a plain POST", {}, "run-1"),
    ("under a root path", {"root_path": "/ca", "path": "/ca/api/runs/run-1/events/"}, "run-1"),
    ("GET", {"method": "GET"}, None),
    ("with a query string", {"query_string": b"x=1"}, None),
    ("another path", {"path": "/api/runs/run-1/events"}, None),
    ("a nested path", {"path": "/api/runs/a/b/events/"}, None),
    ("a NUL in the path", {"path": "/api/runs/a\x00/events/"}, None),
    ("a Host outside ALLOWED_HOSTS", {"headers": [(b"host", b"evil.example")]}, None),
    ("no Host", {"headers": []}, None),
    ("two Hosts", {"headers": [(b"host", b"testserver"), (b"host", b"evil.example")]}, None),
]


@pytest.mark.parametrize(("name", "overrides", "expected"), ROUTES, ids=[r[0] for r in ROUTES])
async def test_which_requests_take_the_fast_path(name, overrides, expected):
    assert events_run_id(_scope(**overrides)) == expected


async def test_plain_http_goes_to_django_when_https_is_required(settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert events_run_id(_scope()) is None
    proxied = [(b"host", b"testserver"), (b"x-forwarded-proto", b"https")]
    assert events_run_id(_scope(headers=proxied)) == "run-1"
    assert events_run_id(_scope(scheme="https")) == "run-1"
    secret = await sync_to_async(_setup)()
    settings.SECURE_HSTS_SECONDS = 3600
    await sync_to_async(_run)("run-1")
    response = await call(
        application, "/api/runs/run-1/events/", batch(1), secret=secret, extra=proxied[1:]
    )
    assert response["status"] == 200
    assert _headers(response)["strict-transport-security"].startswith("max-age=3600")


async def test_what_the_fast_path_leaves_to_django_is_answered_by_django():
    secret = await sync_to_async(_setup)()
    response = await call(application, "/api/runs/run-1/events/", b"", secret=secret, method="GET")
    assert response["status"] == 405  # require_POST
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
    ids = {await kept_connection_sync_to_async(_connection_id)() for _ in range(30)}
    assert len(ids) <= 6  # at most one per pool thread, not one per call


def _open_transaction_and_leave() -> int:
    connection_id = _connection_id()
    transaction.set_autocommit(False)
    return connection_id


def _broken() -> None:
    connection.ensure_connection()
    connection.errors_occurred = True
    connection.is_usable = lambda: False  # type: ignore[method-assign]


def _state() -> tuple[bool, bool]:
    return connection.connection is not None, connection.get_autocommit()


async def test_a_connection_left_in_a_transaction_or_broken_is_closed():
    await sync_to_async(_setup)()
    call_in_pool = kept_connection_sync_to_async
    await call_in_pool(_open_transaction_and_leave)()
    # Every pool thread's connection is open and in autocommit mode (no transaction carried).
    for _ in range(12):
        _, autocommit = await call_in_pool(_state)()
        assert autocommit, "a kept connection carried an open transaction into the next call"
    await call_in_pool(_broken)()
    for _ in range(12):
        await call_in_pool(_connection_id)()  # every thread still gets a working connection
    assert await sync_to_async(RunEvent.objects.count)() == 0


async def test_an_unexpected_failure_is_a_json_500_logged_with_its_traceback(monkeypatch, caplog):
    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")

    def fail(**kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services, "event_ingest", fail)
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
    await layer.group_add(services.run_group("run-1"), member)
    with services.broadcasts_collected() as collected:
        await kept_connection_sync_to_async(services.event_ingest)(
            run_id="run-1", events=[{**EVENT, "seq": 1}, {**EVENT, "seq": 2}]
        )
    assert [group for group, _ in collected] == [services.run_group("run-1"), services.RUNS_GROUP]
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await layer.receive(member)  # nothing was sent from the thread
    await services.broadcasts_send(collected)
    message = await layer.receive(member)
    assert [seq for seq, _ in message["items"]] == [1, 2]


async def test_an_event_post_reaches_an_inspector_group_before_its_answer():
    from channels.layers import get_channel_layer

    secret = await sync_to_async(_setup)()
    await sync_to_async(_run)("run-1")
    layer = get_channel_layer()
    member = await layer.new_channel()
    await layer.group_add(services.run_group("run-1"), member)
    response = await call(application, "/api/runs/run-1/events/", batch(1), secret=secret)
    assert response["status"] == 200
    async with asyncio.timeout(0):  # already delivered when the answer came
        message = await layer.receive(member)
    assert [seq for seq, _ in message["items"]] == [1]
