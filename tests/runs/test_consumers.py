"""Inspector and ingest websockets through the real ASGI stack (origin, session, routing)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from contextadmin.asgi import application
from runs import tokens
from runs.models import RunEvent
from runs.services import ingest, lifecycle
from runs.services.broadcast import run_events_committed
from runs.signals import events_committed
from tests.support.demo import demo_config, demo_events

pytestmark = pytest.mark.django_db(transaction=True)  # async tests: asyncio_mode = "auto"

ORIGIN = (b"origin", b"http://testserver")


def _setup(*, staff: bool = True):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())
    user = get_user_model().objects.create_user("op", password="pw-12345678", is_staff=staff)
    client = Client()
    client.force_login(user)
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    _, secret = tokens.api_token_create(name="rt")
    return client.cookies["sessionid"].value, run.pk, secret


def inspector(path: str, session: str | None, *, origin: bool = True) -> WebsocketCommunicator:
    headers = [ORIGIN] if origin else []
    if session:
        headers.append((b"cookie", f"sessionid={session}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def post(run_id: str, events: list[dict]) -> ingest.IngestResult:
    return await sync_to_async(ingest.event_ingest)(run_id=run_id, events=events)


async def receive(comm: WebsocketCommunicator) -> dict:
    return json.loads(await comm.receive_from(timeout=5))


async def test_snapshot_then_live_events_with_flips():
    session, run_id, _ = await sync_to_async(_setup)()
    comm = inspector(f"/ws/runs/{run_id}/", session)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await receive(comm)
    assert snapshot["type"] == "snapshot" and snapshot["seq"] == 0
    assert snapshot["state"]["context"]["interview_complete"] is False
    await post(run_id, demo_events())
    messages = [await receive(comm) for _ in range(8)]
    assert [m["seq"] for m in messages] == list(range(1, 9))
    flip_message = messages[4]
    assert flip_message["flips"][0]["name"] == "interview_complete"
    assert flip_message["changes"]["interview_complete"] == {"old": False, "new": True}
    assert await comm.receive_nothing(timeout=0.2)
    await comm.disconnect()


async def test_resume_after_k_receives_exactly_the_rest():
    session, run_id, _ = await sync_to_async(_setup)()
    events = demo_events()
    comm = inspector(f"/ws/runs/{run_id}/", session)
    await comm.connect()
    await receive(comm)
    await post(run_id, events[:3])
    seen = [(await receive(comm))["seq"] for _ in range(3)]
    await comm.disconnect()
    await post(run_id, events[3:])  # while disconnected
    again = inspector(f"/ws/runs/{run_id}/?after={seen[-1]}", session)
    await again.connect()
    snapshot = await receive(again)
    assert snapshot["seq"] == 3
    assert snapshot["state"]["context"]["interview_complete"] is False
    rest = [(await receive(again))["seq"] for _ in range(5)]
    assert seen + rest == list(range(1, 9))
    assert await again.receive_nothing(timeout=0.2)
    await again.disconnect()


async def test_a_dropped_group_message_is_refilled_from_the_log():
    session, run_id, _ = await sync_to_async(_setup)()
    comm = inspector(f"/ws/runs/{run_id}/", session)
    await comm.connect()
    await receive(comm)
    # Store two events without broadcasting them (the layer "lost" them), then a third live one.
    events_committed.disconnect(dispatch_uid="runs.broadcast")
    try:
        await post(run_id, demo_events()[:2])
    finally:
        events_committed.connect(run_events_committed, dispatch_uid="runs.broadcast")
    await post(run_id, demo_events()[2:3])
    assert [(await receive(comm))["seq"] for _ in range(3)] == [1, 2, 3]
    assert await comm.receive_nothing(timeout=0.2)
    await comm.disconnect()


async def test_run_list_socket_announces_starts_and_status_changes():
    session, _, _ = await sync_to_async(_setup)()
    comm = inspector("/ws/runs/", session)
    assert (await comm.connect())[0]
    started = await sync_to_async(lifecycle.run_start)(
        workflow_name="Generator", enterprise_id="globex"
    )
    message = await receive(comm)
    assert message["type"] == "run" and message["run"]["id"] == started.run.pk
    await post(started.run.pk, [{"type": "run_status", "status": "completed"}])
    message = await receive(comm)
    assert (message["run"]["id"], message["run"]["status"], message["run"]["event_count"]) == (
        started.run.pk,
        "completed",
        1,
    )
    # the row's last event time, which a page new to the run has nowhere else to read from
    # (without it, a run that just reported showed as silent since its start: stale)
    received = await sync_to_async(
        lambda: RunEvent.objects.get(run_id=started.run.pk, seq=1).received_at
    )()
    assert message["run"]["last_event_at"] == received.isoformat()
    await comm.disconnect()


@pytest.mark.parametrize(
    ("who", "origin"),
    [
        pytest.param("anonymous", True, id="anonymous"),
        pytest.param("non-staff", True, id="non-staff"),
        pytest.param("staff", False, id="missing-origin"),
    ],
)
async def test_inspector_sockets_refuse_outsiders(who, origin):
    session, run_id, _ = await sync_to_async(_setup)(staff=who != "non-staff")
    for path in (f"/ws/runs/{run_id}/", "/ws/runs/"):
        comm = inspector(path, None if who == "anonymous" else session, origin=origin)
        connected, _ = await comm.connect()
        assert not connected, path
        await comm.disconnect()


async def test_cross_origin_inspector_is_refused():
    session, run_id, _ = await sync_to_async(_setup)()
    comm = WebsocketCommunicator(
        application,
        f"/ws/runs/{run_id}/",
        headers=[(b"origin", b"http://evil.example"), (b"cookie", f"sessionid={session}".encode())],
    )
    assert not (await comm.connect())[0]


async def test_unknown_run_and_bad_after_get_an_error_message():
    session, run_id, _ = await sync_to_async(_setup)()
    for path, fragment in (
        ("/ws/runs/nope/", "run_id"),
        (f"/ws/runs/{run_id}/?after=x", "after"),
        (f"/ws/runs/{run_id}/?after=99", "after: the run has"),
    ):
        comm = inspector(path, session)
        await comm.connect()
        message = await receive(comm)
        assert message["type"] == "error" and message["error"].startswith(fragment), message
        await comm.disconnect()


async def test_ingest_over_websocket_acks_each_event_after_commit():
    session, run_id, secret = await sync_to_async(_setup)()
    watcher = inspector(f"/ws/runs/{run_id}/", session)
    await watcher.connect()
    await receive(watcher)
    ingest = WebsocketCommunicator(application, f"/ws/ingest/{run_id}/?token={secret}")
    assert (await ingest.connect())[0]
    acks = []
    for event in demo_events():
        await ingest.send_json_to(event)
        acks.append(await ingest.receive_json_from(timeout=5))
    assert [a["seq"] for a in acks] == list(range(1, 9))
    assert acks[4]["flips"][0]["name"] == "interview_complete"
    assert await sync_to_async(RunEvent.objects.filter(run_id=run_id).count)() == 8
    assert [(await receive(watcher))["seq"] for _ in range(8)] == list(range(1, 9))
    # bad messages: an error naming the field, nothing stored
    await ingest.send_to(text_data="{not json")
    assert (await ingest.receive_json_from())["error"].startswith("message")
    await ingest.send_json_to({"type": "agent_text", "text": "x"})
    assert "agent" in (await ingest.receive_json_from())["error"]
    await ingest.send_json_to({"type": "agent_text", "agent": "a", "text": "x", "seq": 20})
    error = await ingest.receive_json_from()
    assert error["status"] == 409 and error["expected_seq"] == 9
    assert await sync_to_async(RunEvent.objects.filter(run_id=run_id).count)() == 8
    await ingest.disconnect()
    await watcher.disconnect()


async def test_ingest_batch_frame_is_all_or_nothing_and_answered_as_the_events_post():
    _, run_id, secret = await sync_to_async(_setup)()
    events = [{**event, "seq": seq} for seq, event in enumerate(demo_events(), start=1)]
    comm = WebsocketCommunicator(application, f"/ws/ingest/{run_id}/?token={secret}")
    assert (await comm.connect())[0]
    stored = sync_to_async(RunEvent.objects.filter(run_id=run_id).count)
    # a bad event refuses the whole batch, naming the field; nothing of it is stored
    bad = [*events[:3], {"type": "agent_text", "text": "no agent", "seq": 4}]
    await comm.send_json_to({"events": bad})
    error = await comm.receive_json_from(timeout=5)
    assert error["type"] == "error" and error["status"] == 400
    assert error["error"].startswith("events[3].agent"), error
    assert await stored() == 0
    for frame, fragment in (
        ({"events": events, "extra": 1}, "extra: unknown field"),
        ({"events": "x"}, "events: must be a list"),
    ):
        await comm.send_json_to(frame)
        assert (await comm.receive_json_from(timeout=5))["error"].startswith(fragment)
    # a good batch: one answer, as the POST's
    await comm.send_json_to({"events": events[:5]})
    answer = await comm.receive_json_from(timeout=5)
    assert answer["type"] == "batch_ack" and answer["last_seq"] == 5
    assert [ack["seq"] for ack in answer["acks"]] == [1, 2, 3, 4, 5]
    assert answer["flips"][0]["name"] == "interview_complete"
    # re-sent after a reconnect: acknowledged again, stored once; a changed payload is a 409
    await comm.send_json_to({"events": events})
    assert (await comm.receive_json_from(timeout=5))["last_seq"] == 8
    assert await stored() == 8
    await comm.send_json_to({"events": [{**events[0], "text": "changed"}]})
    conflict = await comm.receive_json_from(timeout=5)
    assert conflict["type"] == "error" and conflict["status"] == 409
    assert await stored() == 8
    await comm.disconnect()


async def test_ingest_socket_refuses_bad_tokens_and_foreign_origins():
    _, run_id, secret = await sync_to_async(_setup)()
    for path, headers in (
        (f"/ws/ingest/{run_id}/", []),
        (f"/ws/ingest/{run_id}/?token=ca_00000000_{'x' * 43}", []),
        (f"/ws/ingest/{run_id}/?token={secret}", [(b"origin", b"http://evil.example")]),
    ):
        comm = WebsocketCommunicator(application, path, headers=headers)
        assert not (await comm.connect())[0], path
    comm = WebsocketCommunicator(
        application,
        f"/ws/ingest/{run_id}/",
        headers=[(b"authorization", f"Bearer {secret}".encode())],
    )
    assert (await comm.connect())[0]
    await comm.disconnect()


def _setup_with_handoff() -> tuple[str, str, str]:
    from contextadmin.services import workflow_import

    config = demo_config()
    config["handoffs"] = [
        {
            "source_agent": "InterviewAgent",
            "target_agent": "ContextVariablesAgent",
            "condition": "${interview_complete}",
            "description": "the interview is done",
        }
    ]
    workflow_import(name="Handing", data=config)
    session, _, secret = _setup()
    run = lifecycle.run_start(workflow_name="Handing", enterprise_id="acme").run
    return session, run.pk, secret


async def test_readiness_and_sender_come_from_the_server_live_and_on_catch_up():
    """Every snapshot and event message carries the hand-off readiness after it (the engine's
    ``handoffs_readiness``) and the event's sender; a late inspector's catch-up messages are
    the very messages the live one got."""
    session, run_id, _ = await sync_to_async(_setup_with_handoff)()
    live = inspector(f"/ws/runs/{run_id}/", session)
    await live.connect()
    snapshot = await receive(live)
    assert [h["status"] for h in snapshot["handoffs"]] == ["not yet"]
    events = demo_events()
    await post(run_id, events)
    texts = [await live.receive_from(timeout=5) for _ in events]
    messages = [json.loads(text) for text in texts]
    assert [m["agent"] for m in messages] == [e.get("agent") for e in events]
    statuses = [m["handoffs"][0]["status"] for m in messages]
    assert statuses == ["not yet"] * 4 + ["holds"] * (len(events) - 4)  # the flip is event 5
    assert messages[4]["handoffs"][0]["values"] == [
        {"name": "interview_complete", "present": True, "value": True}
    ]
    late = inspector(f"/ws/runs/{run_id}/?after=2", session)
    await late.connect()
    late_snapshot = await receive(late)
    assert late_snapshot["seq"] == 2 and late_snapshot["handoffs"][0]["status"] == "not yet"
    assert [await late.receive_from(timeout=5) for _ in events[2:]] == texts[2:]
    await live.disconnect()
    await late.disconnect()


def test_the_state_api_carries_the_readiness(client, django_user_model):
    _, run_id, secret = _setup_with_handoff()
    events = demo_events()
    ingest.event_ingest(run_id=run_id, events=events)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    latest = client.get(f"/api/runs/{run_id}/state/", **auth).json()
    early = client.get(f"/api/runs/{run_id}/state/?at=1", **auth).json()
    assert latest["handoffs"][0]["status"] == "holds"
    assert early["handoffs"][0]["status"] == "not yet"
