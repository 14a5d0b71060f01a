"""Sending within its limits: a request ends by its deadline however its answer trickles in,
a delivery is sent by the worker holding its lease only and its outcome stored by it only,
a Retry-After never shortens the backoff, and a redelivery starts its backoff again; against
a real receiver."""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.services.ingest import event_ingest
from runs.services.lifecycle import run_start
from runs.webhooks.models import Attempt, Delivery
from runs.webhooks.services import delivery as delivery_service
from runs.webhooks.services import sending
from runs.webhooks.services.delivery import deliveries_drain, delivery_redeliver, lane_heads
from runs.webhooks.services.subscriptions import subscription_create
from tests.runs.webhooks.receiver import Receiver, Reply
from tests.support.demo import demo_events

pytestmark = pytest.mark.django_db


def _subscribe(receiver: Receiver) -> None:
    _, receiver.secret = subscription_create(url=receiver.url(), events=["flag_flipped"])


def _run_with_a_flip() -> None:
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(run_id=run.pk, events=demo_events()[:6])


def test_a_receiver_trickling_its_answer_is_cut_at_the_deadline(generator, receiver) -> None:
    """Each header comes within the read timeout (0.5 s), the answer never: cut at the
    connect and read timeouts added up (1.5 s), well within the lease (3 s)."""
    _subscribe(receiver)
    receiver.replies = [Reply(200, drip_s=5.0)]
    _run_with_a_flip()
    started = time.monotonic()
    deliveries_drain(budget_s=0.1)
    assert time.monotonic() - started < 3.0
    attempt = Attempt.objects.get()
    assert not attempt.ok and attempt.status_code is None
    assert "timed out: no complete answer within 1.5 s" in attempt.error
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.lease_until) == ("pending", 1, None)


def test_a_head_another_worker_sent_meanwhile_is_not_sent_again(
    generator, receiver, settings, monkeypatch
) -> None:
    """Worker A read the lane heads; worker B sent the head (a 500: retry in a minute)
    before A claimed it. A must not send it again now, nor count from a stale row."""
    settings.WEBHOOKS_BACKOFF_BASE_S = 60.0
    _subscribe(receiver)
    receiver.replies = [Reply(500)]
    _run_with_a_flip()
    read_by_a = lane_heads(now=timezone.now())
    deliveries_drain(budget_s=0.1)  # worker B
    monkeypatch.setattr(delivery_service, "lane_heads", lambda *, now: read_by_a)
    deliveries_drain(budget_s=0.1)  # worker A, with the heads it read before
    assert len(receiver.received) == 1
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert (delivery.next_attempt_at - timezone.now()).total_seconds() > 30


def test_an_attempt_that_lost_its_lease_does_not_overwrite_the_delivery(
    generator, receiver, monkeypatch
) -> None:
    """While this worker sends, its lease passes to another (a redelivery, a stall): the
    attempt is recorded, the delivery left as the lease holder will store it."""
    _subscribe(receiver)
    _run_with_a_flip()
    post = sending.post
    taken_over = timezone.now() + timezone.timedelta(minutes=5)

    def post_while_another_takes_the_lease(**kwargs: Any) -> sending.Answer:
        Delivery.objects.update(lease_until=taken_over)
        return post(**kwargs)

    monkeypatch.setattr(sending, "post", post_while_another_takes_the_lease)
    deliveries_drain(budget_s=0.1)
    assert len(receiver.wait(1)) == 1
    assert Attempt.objects.get().ok
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 0)
    assert delivery.lease_until == taken_over


@pytest.mark.parametrize("value", ["0", "Thu, 01 Jan 1970 00:00:00 GMT"])
def test_a_retry_after_of_now_waits_the_backoff(generator, receiver, settings, value) -> None:
    """A 429 that asks for no wait (0, a date past) is not asked again in a loop."""
    settings.WEBHOOKS_BACKOFF_BASE_S = 0.5
    _subscribe(receiver)
    receiver.default = Reply(429, headers={"Retry-After": value})
    _run_with_a_flip()
    deliveries_drain(budget_s=1.0)
    assert 1 <= len(receiver.received) <= 2
    delivery = Delivery.objects.get()
    assert delivery.status == "pending" and delivery.last_error == "HTTP 429"


def test_a_redelivery_starts_its_backoff_again(generator, receiver, settings) -> None:
    """Redelivered after eight failed attempts, a failure is retried after the base backoff,
    not after the hours an eighth retry waits."""
    settings.WEBHOOKS_BACKOFF_BASE_S = 0.2
    _subscribe(receiver)
    receiver.replies = [Reply(500)]
    _run_with_a_flip()
    Delivery.objects.update(status="failed", attempts=8, finished_at=timezone.now())
    delivery_redeliver(delivery=Delivery.objects.get())
    deliveries_drain(budget_s=0.1)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 9)
    assert (delivery.next_attempt_at - timezone.now()).total_seconds() < 1.0


def test_a_redelivery_keeps_the_events_time_and_opens_a_new_window(
    generator, receiver, admin_client
) -> None:
    """Redelivered two days after its event, whose retry window ended a day ago: the admin
    still shows when the event happened (and when it was redelivered), and a failure is
    retried within the redelivery's own window, not failed at once."""
    _subscribe(receiver)
    receiver.replies = [Reply(500)]
    _run_with_a_flip()
    happened = timezone.now() - dt.timedelta(days=2)
    (queued,) = Delivery.objects.all()
    payload = {**queued.payload, "timestamp": happened.isoformat(timespec="milliseconds")}
    Delivery.objects.update(
        status="failed",
        attempts=8,
        finished_at=timezone.now(),
        created_at=happened,
        payload=payload,
    )
    delivery_redeliver(delivery=Delivery.objects.get())
    deliveries_drain(budget_s=0.1)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 9)
    assert abs(delivery.event_at - happened) < dt.timedelta(milliseconds=1)
    assert delivery.redelivered_at is not None and delivery.redelivered_at > happened
    page = admin_client.get(
        reverse("admin:webhooks_subscription_change", args=[delivery.subscription_id])
    ).content.decode()
    assert f'delivery-event-at">{happened:%Y-%m-%d %H:%M:%S}<' in page
    assert f"redelivered {delivery.redelivered_at:%Y-%m-%d %H:%M:%S}" in page


def test_a_hung_dns_lookup_fails_the_attempt_within_the_connect_timeout(
    monkeypatch, settings
) -> None:
    """The system resolver takes no timeout, and a hung DNS server cannot be set up here (the
    resolver is the machine's): getaddrinfo is replaced by a lookup that never answers, the
    one stand-in of these tests. The attempt fails (and is retried) at the connect timeout
    instead of holding the worker past its lease."""
    settings.WEBHOOKS_CONNECT_TIMEOUT_S = 0.3
    release = threading.Event()

    def hung(*args: Any, **kwargs: Any) -> Any:
        release.wait(10)
        raise OSError("released")

    monkeypatch.setattr(sending.socket, "getaddrinfo", hung)
    started = time.monotonic()
    try:
        with pytest.raises(
            sending.SendFailed, match=r"^cannot resolve hooks\.example: no answer within 0\.3 s$"
        ):
            sending.post(url="https://hooks.example/in", body=b"{}", headers={})
        assert time.monotonic() - started < 2.0
    finally:
        release.set()
