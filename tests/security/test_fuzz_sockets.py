"""Fuzzing websocket messages: the ingest socket answers every frame with an ack or an error
naming the problem, and stores nothing it refused; inspector sockets ignore what they are sent.

Hypothesis drives each example through the real ASGI stack (origin check, session, routing).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from contextadmin.asgi import application
from contextadmin.services import workflow_import
from runs import tokens
from runs.models import Run, RunEvent
from runs.services import lifecycle
from tests.runs.conftest import demo_config
from tests.security.strategies import (
    VALID_EVENTS,
    hostile_event,
    hostile_json,
    json_body,
)

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://testserver")


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@pytest.fixture
def site(caplog) -> dict[str, Any]:
    caplog.set_level(logging.ERROR)
    workflow_import(name="Generator", data=demo_config())
    user = get_user_model().objects.create_user("op", password="pw-12345678", is_staff=True)
    client = Client()
    client.force_login(user)
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    _, secret = tokens.api_token_create(name="rt")
    yield {"session": client.cookies["sessionid"].value, "run_id": run.pk, "secret": secret}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def stored(run_id: str) -> tuple[int, int]:
    return RunEvent.objects.filter(run_id=run_id).count(), Run.objects.get(pk=run_id).last_seq


frames = (
    hostile_event().map(lambda e: ("text", json_body(e).decode("utf-8", "surrogatepass")))
    | st.sampled_from(VALID_EVENTS).map(lambda e: ("text", json.dumps(e)))
    | hostile_json.map(lambda v: ("text", json_body(v).decode("utf-8", "surrogatepass")))
    | st.text(max_size=50).map(lambda t: ("text", t))
    | st.binary(max_size=50).map(lambda b: ("bytes", b))
    | st.sampled_from(
        [
            ("text", '{"type": "agent_text", "agent": "a", "text": "\\u0000"}'),
            ("text", '{"type": "agent_text", "agent": "a", "text": "\\ud800"}'),
            ("text", "[" * 2000 + "]" * 2000),
            ("text", '{"type": "agent_text", "agent": "a", "text": "x", "seq": 99999999999}'),
            ("text", ""),
        ]
    )
)


async def send_frame(comm: WebsocketCommunicator, kind: str, payload: Any) -> None:
    """Send one frame as the server sees it (the communicator's helper refuses empty text)."""
    await comm.send_input({"type": "websocket.receive", kind: payload})


async def _ingest_session(site: dict[str, Any], messages: list[tuple[str, Any]]) -> list[str]:
    path = f"/ws/ingest/{site['run_id']}/?token={site['secret']}"
    comm = WebsocketCommunicator(application, path)
    connected, _ = await comm.connect()
    assert connected
    replies = []
    for kind, payload in messages:
        before = await sync_to_async(stored)(site["run_id"])
        await send_frame(comm, kind, payload)
        reply = await comm.receive_json_from(timeout=5)
        assert reply["type"] in ("ack", "error"), reply
        replies.append(reply["type"])
        if reply["type"] == "error":
            assert isinstance(reply["error"], str) and reply["error"]
            assert "Traceback" not in reply["error"]
            assert await sync_to_async(stored)(site["run_id"]) == before
    await comm.disconnect()
    return replies


@fuzz(100)
@given(messages=st.lists(frames, min_size=1, max_size=6))
@example(messages=[("text", '{"type": "agent_text", "agent": {"name": "a", "x": '
                   + "[" * 300 + "]" * 300 + '}, "text": "x"}')])
def test_ingest_socket_messages(site, messages):
    for reply in async_to_sync(_ingest_session)(site, messages):
        event(reply)


async def _inspector_session(site: dict[str, Any], path: str, messages: list[Any]) -> None:
    comm = WebsocketCommunicator(
        application,
        path,
        headers=[ORIGIN, (b"cookie", f"sessionid={site['session']}".encode())],
    )
    connected, _ = await comm.connect()
    assert connected
    if path != "/ws/runs/":
        assert (await comm.receive_json_from(timeout=5))["type"] == "snapshot"
    for kind, payload in messages:
        await send_frame(comm, kind, payload)
    if path != "/ws/runs/":  # still alive, and still answering pings
        await comm.send_to(text_data='{"type": "ping"}')
        replies = [await comm.receive_json_from(timeout=5)]
        while not await comm.receive_nothing(timeout=0.05):
            replies.append(await comm.receive_json_from())
        assert {r["type"] for r in replies} <= {"pong", "event"}, replies
        assert replies[-1]["type"] == "pong"
    else:
        assert await comm.receive_nothing(timeout=0.05)
    await comm.disconnect()


@fuzz(40)
@given(
    messages=st.lists(frames, min_size=1, max_size=5),
    which=st.sampled_from(["run", "list"]),
)
@example(messages=[("text", '"ping"' + "x" * 190)], which="run")
@example(messages=[("bytes", b'{"type": "ping"}')], which="run")
def test_inspector_sockets_ignore_incoming_text(site, messages, which):
    path = f"/ws/runs/{site['run_id']}/" if which == "run" else "/ws/runs/"
    async_to_sync(_inspector_session)(site, path, messages)


async def _refused_with_a_message(site: dict[str, Any], path: str, headers: list) -> dict:
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect()
    assert connected, path
    message = await comm.receive_json_from(timeout=5)
    closed = await comm.receive_output(timeout=5)
    assert closed["type"] == "websocket.close" and 4400 <= closed["code"] < 4500, closed
    return message


def test_odd_socket_paths_and_queries_get_an_error_message(site):
    cookie = (b"cookie", f"sessionid={site['session']}".encode())
    run_id, secret = site["run_id"], site["secret"]
    odd_ids = ["a%00b", "%ED%A0%80", "x" * 5000, "..", "%2e%2e", "<script>"]
    cases = [
        (f"/ws/runs/{run_id}/?after={after}", [ORIGIN, cookie], "after")
        for after in ("-1", "9" * 40, "%00", "1.5", "abc", "%ff")
    ]
    for path, headers, field in cases:
        message = async_to_sync(_refused_with_a_message)(site, path, headers)
        assert message["type"] == "error" and message["error"].startswith(field), (path, message)
    # a run id that breaks the run-id rule has no route: refused at the handshake
    # (tests/security/test_socket_paths.py checks the same on a real Daphne)
    for path, headers in [
        *((f"/ws/runs/{odd}/", [ORIGIN, cookie]) for odd in odd_ids),
        *((f"/ws/ingest/{odd}/?token={secret}", []) for odd in odd_ids),
    ]:
        assert not async_to_sync(_handshake)(path, headers), path


async def _handshake(path: str, headers: list) -> bool:
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect()
    await comm.disconnect()
    return connected
