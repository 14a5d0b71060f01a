"""The ingest socket commits what queued while the previous batch committed as one batch
(group commit, a B2 optimisation) and still answers exactly as one event at a time would."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from contextadmin.asgi import application
from runs import tokens
from runs.models import RunEvent
from runs.services import ingest as ingest_service
from runs.services import lifecycle
from tests.support.demo import demo_config, demo_events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def _setup() -> tuple[str, str]:
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    return run.pk, tokens.api_token_create(name="rt")[1]


def _events(count: int) -> list[dict]:
    demo = demo_events()
    return [{**demo[i % len(demo)], "seq": i + 1} for i in range(count)]


async def test_pipelined_events_are_committed_in_batches_and_acked_one_by_one(monkeypatch):
    run_id, secret = await sync_to_async(_setup)()
    sizes: list[int] = []
    original = ingest_service.events_ingest_many

    def recording(*, requests):
        sizes.extend(len(request.events) for request in requests)
        return original(requests=requests)

    monkeypatch.setattr(ingest_service, "events_ingest_many", recording)
    ingest = WebsocketCommunicator(application, f"/ws/ingest/{run_id}/?token={secret}")
    assert (await ingest.connect())[0]
    events = _events(200)
    for event in events:  # no waiting for acks: they queue up while a batch commits
        await ingest.send_to(text_data=json.dumps(event))
    acks = [await ingest.receive_json_from(timeout=10) for _ in events]
    await ingest.disconnect()
    assert [a["seq"] for a in acks] == list(range(1, 201))
    assert all(a["type"] == "ack" for a in acks)
    assert acks[4]["flips"][0]["name"] == "interview_complete"
    assert sum(sizes) == 200 and max(sizes) > 1, sizes  # batched, nothing twice
    stored = await sync_to_async(list)(
        RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True)
    )
    assert stored == list(range(1, 201))


async def test_a_bad_event_in_a_batch_gets_its_own_error_in_order():
    run_id, secret = await sync_to_async(_setup)()
    ingest = WebsocketCommunicator(application, f"/ws/ingest/{run_id}/?token={secret}")
    assert (await ingest.connect())[0]
    good = _events(3)
    frames = [
        json.dumps(good[0]),
        "{not json",
        json.dumps(good[1]),
        json.dumps({"type": "agent_text", "text": "no agent", "seq": 3}),
        json.dumps({**good[2], "seq": 9}),  # a gap
        json.dumps(good[2]),
        json.dumps(good[0]),  # a retry of seq 1: acked again
    ]
    for frame in frames:
        await ingest.send_to(text_data=frame)
    replies = [await ingest.receive_json_from(timeout=10) for _ in frames]
    await ingest.disconnect()
    kinds = [(r["type"], r.get("seq"), r.get("status")) for r in replies]
    assert kinds[0] == ("ack", 1, None)
    assert kinds[1][0] == "error" and replies[1]["error"].startswith("message")
    assert kinds[2] == ("ack", 2, None)
    assert kinds[3][0] == "error" and "agent" in replies[3]["error"]
    assert kinds[4] == ("error", None, 409) and replies[4]["expected_seq"] == 3
    assert kinds[5] == ("ack", 3, None)
    assert kinds[6] == ("ack", 1, None)
    assert await sync_to_async(RunEvent.objects.filter(run_id=run_id).count)() == 3
