"""The outbox: deliveries written in the transaction of what caused them, in order, filtered;
the after-commit hook fires once per committed batch."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import connection
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from contextadmin.errors import ApiError
from contextadmin.models import Workflow
from contextadmin.services import workflow_import
from runs import selectors
from runs.models import Run, RunEvent
from runs.services.ingest import IngestRequest, event_ingest, events_ingest_many
from runs.services.lifecycle import run_start
from runs.services.run_import import run_import
from runs.signals import events_committed
from runs.webhooks.models import Delivery, StaleRun, Subscription
from runs.webhooks.services.stale import runs_stale_raise
from runs.webhooks.services.subscriptions import subscription_create, subscriptions_active
from runs.webhooks.services.tick import tick_schedule, webhooks_tick
from tests.support.demo import demo_config, demo_events

pytestmark = pytest.mark.django_db(transaction=True)
ALL = [
    "flag_flipped", "handoff", "run_started", "run_ended", "run_stale", "warning",
    "version_published",
]
HANDOFF = {"type": "handoff", "agent": "InterviewAgent", "target": "ContextVariablesAgent"}


def _events(**filters: object) -> list[tuple[str, object]]:
    rows = Delivery.objects.filter(**filters).order_by("pk")
    return [(d.event, d.payload["data"].get("seq")) for d in rows]


def test_a_batch_writes_its_deliveries_in_seq_order_with_the_payload_fields(generator) -> None:
    subscription, _ = subscription_create(url="https://h.example/x", events=ALL)
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    events = [*demo_events()[:6], HANDOFF, {"type": "run_status", "status": "failed"}]
    event_ingest(run_id=run.pk, events=events)
    assert _events(subscription=subscription) == [
        ("run_started", 0), ("flag_flipped", 5), ("handoff", 7), ("run_ended", 8),
    ]
    flip = Delivery.objects.get(event="flag_flipped")
    assert flip.lane == run.pk
    assert flip.message_id.startswith("msg_")
    data = flip.payload["data"]
    assert data == {
        "event": "flag_flipped",
        "run_id": run.pk,
        "workflow": "Generator",
        "version": run.workflow_version,
        "enterprise_id": "acme",
        "environment": "development",
        "seq": 5,
        "url": f"https://contextadmin.example/runs/{run.pk}/?at=5",
        "flag": "interview_complete",
        "value": True,
        "cause": data["cause"],
        "trigger_index": 0,
    }
    assert data["cause"]["agent"] == "InterviewAgent"
    assert Delivery.objects.get(event="run_ended").payload["data"]["status"] == "failed"
    assert DBTaskResult.objects.exists()  # the send task, enqueued with the rows


def test_the_group_commit_writes_each_batchs_deliveries(generator) -> None:
    """The ingest sockets' path: many runs' batches in one transaction."""
    subscription_create(url="https://h.example/x", events=["handoff"])
    runs = [run_start(workflow_name="Generator", enterprise_id="acme").run for _ in range(3)]
    requests = [IngestRequest(run_id=run.pk, events=[HANDOFF]) for run in runs]
    requests.append(IngestRequest(run_id=runs[0].pk, events=[{"type": "nope"}]))  # refused alone
    outcomes = events_ingest_many(requests=requests)
    assert isinstance(outcomes[-1], ApiError)
    assert sorted(Delivery.objects.values_list("lane", flat=True)) == sorted(r.pk for r in runs)


def test_a_refused_batch_writes_no_delivery(generator) -> None:
    subscription_create(url="https://h.example/x", events=["flag_flipped", "handoff"])
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    bad = [*demo_events()[:6], {"type": "handoff", "agent": 5}]
    with pytest.raises(ApiError):
        event_ingest(run_id=run.pk, events=bad)
    assert not Delivery.objects.exists()
    assert Run.objects.get(pk=run.pk).last_seq == 0


def test_filters_flags_statuses_and_workflow(generator) -> None:
    config = demo_config()  # a flag a filter may name, which Generator's runs never flip
    config["context_variables"]["derived_variables"][0]["name"] = "some_other_flag"
    workflow_import(name="Other", data=config)
    other = Workflow.objects.get(name="Other")
    flags_only = subscription_create(
        url="https://h.example/a", events=["flag_flipped"], flags=["some_other_flag"]
    )[0]
    completed_only = subscription_create(
        url="https://h.example/b", events=["run_ended"], end_statuses=["completed"]
    )[0]
    elsewhere = subscription_create(
        url="https://h.example/c", events=ALL, workflow=other
    )[0]
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(run_id=run.pk, events=[*demo_events(), {"type": "run_status", "status": "failed"}])
    assert _events(subscription=flags_only) == []
    assert _events(subscription=completed_only) == []
    assert _events(subscription=elsewhere) == []
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(run_id=run.pk, events=[{"type": "run_status", "status": "completed"}])
    assert _events(subscription=completed_only) == [("run_ended", 1)]


def test_no_subscription_writes_nothing(generator) -> None:
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(run_id=run.pk, events=demo_events())
    assert not Delivery.objects.exists()
    assert not DBTaskResult.objects.exists()


def test_publishing_a_version_writes_version_published(generator) -> None:
    subscription_create(url="https://h.example/x", events=["version_published"])
    config = demo_config()
    config["context_variables"]["declarative_variables"][0]["description"] = "changed"
    workflow_import(name="Generator", data=config, replace=True)
    delivery = Delivery.objects.get()
    data = delivery.payload["data"]
    assert (data["event"], data["workflow"]) == ("version_published", "Generator")
    assert data["version"] == 2
    assert data["digest"].startswith("sha256:")
    assert delivery.lane == f"workflow:{generator.pk}"


def test_events_committed_fires_once_per_committed_batch(generator) -> None:
    seen: list[tuple[str, list[int]]] = []

    def receive(sender, *, run, events, **kwargs) -> None:
        seen.append((run.pk, [e.seq for e in events]))

    events_committed.connect(receive, dispatch_uid="test")
    try:
        run = run_start(workflow_name="Generator", enterprise_id="acme").run
        events = [{**e, "seq": seq} for seq, e in enumerate(demo_events(), start=1)]
        event_ingest(run_id=run.pk, events=events[:3])
        event_ingest(run_id=run.pk, events=events[:3])  # retried seqs: nothing new
        with pytest.raises(ApiError):
            event_ingest(run_id=run.pk, events=[{"type": "nope"}])
        event_ingest(run_id=run.pk, events=events[3:5])
    finally:
        events_committed.disconnect(dispatch_uid="test")
    assert seen == [(run.pk, [1, 2, 3]), (run.pk, [4, 5])]


def test_an_imported_past_run_notifies_nobody_and_still_reaches_its_inspectors(
    generator,
) -> None:
    """``import_run`` loads a production run onto a laptop: its flips, hand-offs and end were
    each paged once already, when they happened."""
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(
        run_id=run.pk,
        events=[*demo_events()[:6], HANDOFF, {"type": "run_status", "status": "completed"}],
    )
    lines = [
        json.dumps(selectors.run_export_header(run=Run.objects.get(pk=run.pk))),
        *(json.dumps(p) for p in RunEvent.objects.filter(run=run).order_by("seq")
          .values_list("payload", flat=True)),
    ]
    subscription_create(url="https://h.example/x", events=ALL)
    seen: list[bool] = []

    def receive(sender, *, replay, **kwargs) -> None:
        seen.append(replay)

    events_committed.connect(receive, dispatch_uid="test")
    try:
        imported = run_import(lines=lines, run_id="copy").run
    finally:
        events_committed.disconnect(dispatch_uid="test")
    assert imported.last_seq == 8 and imported.status == "completed"
    assert not Delivery.objects.filter(lane="copy").exists()
    assert seen == [True]  # the broadcast still runs: an open inspector shows the import
    event_ingest(run_id=run_start(workflow_name="Generator", enterprise_id="acme").run.pk,
                 events=[HANDOFF])
    assert Delivery.objects.filter(event="handoff").count() == 1  # a live run still notifies


def test_a_silent_run_raises_run_stale_once(generator, settings) -> None:
    settings.RUNS_STALE_AFTER_S = 60
    subscription_create(url="https://h.example/x", events=["run_stale"])
    quiet = run_start(workflow_name="Generator", enterprise_id="acme").run
    busy = run_start(workflow_name="Generator", enterprise_id="acme").run
    ended = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(run_id=ended.pk, events=[{"type": "run_status", "status": "completed"}])
    old = timezone.now() - dt.timedelta(minutes=5)
    Run.objects.update(started_at=old)
    event_ingest(run_id=busy.pk, events=demo_events()[:1])
    assert runs_stale_raise() == 1
    assert runs_stale_raise() == 0  # once
    assert list(StaleRun.objects.values_list("run_id", flat=True)) == [quiet.pk]
    delivery = Delivery.objects.get()
    assert (delivery.event, delivery.lane) == ("run_stale", quiet.pk)
    assert delivery.payload["data"]["stale_after_s"] == 60


def test_the_tick_schedules_one_chain_and_does_the_periodic_work(
    generator, settings, receiver
) -> None:
    settings.RUNS_STALE_AFTER_S = 60
    settings.WEBHOOKS_TICK_S = 30
    receiver.secret = subscription_create(url=receiver.url(), events=["run_stale"])[1]
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - dt.timedelta(minutes=5))
    old = Delivery.objects.create(
        subscription=Subscription.objects.get(), lane="x", event="handoff", message_id="msg_old",
        payload={}, status="delivered", next_attempt_at=timezone.now(),
        finished_at=timezone.now() - dt.timedelta(days=settings.RUNS_RETENTION_DAYS + 1),
    )
    assert tick_schedule() is True
    assert tick_schedule() is False  # one chain: the next tick is not due yet
    ticks = DBTaskResult.objects.filter(task_path=webhooks_tick.module_path)
    assert ticks.count() == 1 and ticks.get().run_after > timezone.now()
    webhooks_tick.call()  # what a worker runs: not due, so it schedules nothing more
    assert ticks.count() == 1
    stale = Delivery.objects.get(event="run_stale", lane=run.pk)
    assert stale.status == "delivered"  # the tick also sends what is due
    assert receiver.wait(1)[0].payload["data"]["run_id"] == run.pk
    assert not Delivery.objects.filter(pk=old.pk).exists()


def test_a_warnings_large_value_is_cut_like_its_text(generator) -> None:
    """A refused value may be as large as an event: the payload carries its start (the run
    page has it whole), and says so; a small one stays as it is."""
    subscription_create(url="https://h.example/x", events=["warning"])
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    warning = {"type": "warning", "text": "refused", "agent": "A", "name": "x", "rule": "base"}
    event_ingest(
        run_id=run.pk,
        events=[{**warning, "value": {"big": "v" * 90_000}}, {**warning, "value": [1, 2]}],
    )
    large, small = (d.payload["data"] for d in Delivery.objects.order_by("pk"))
    assert large["value"] == json.dumps({"big": "v" * 90_000}, separators=(",", ":"))[:300]
    assert large["value_truncated"] is True and large["text"] == "refused"
    assert small["value"] == [1, 2] and "value_truncated" not in small


def test_a_subscription_another_process_just_deleted_does_not_fail_the_batch(generator) -> None:
    """Deleted elsewhere (this process's cached set still holds it): the batch is stored,
    without a delivery for it, instead of failing on the missing row."""
    subscription, _ = subscription_create(url="https://h.example/x", events=["handoff"])
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    assert subscriptions_active() == (subscription,)  # cached, as ingest reads it
    with connection.cursor() as cursor:  # another process: no signal clears this cache
        cursor.execute("DELETE FROM webhooks_subscription WHERE id = %s", [subscription.pk])
    event_ingest(run_id=run.pk, events=[HANDOFF])
    assert RunEvent.objects.filter(run=run, type="handoff").exists()
    assert not Delivery.objects.exists()
