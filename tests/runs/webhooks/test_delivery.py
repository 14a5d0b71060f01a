"""Sending: signed per Standard Webhooks, retried on 5xx/429/timeouts (same webhook-id), not on
other 4xx, in order per run, refused for private addresses; against a real receiver."""

from __future__ import annotations

import datetime as dt
import io
import json
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from runs.services.ingest import event_ingest
from runs.services.lifecycle import run_start
from runs.webhooks.models import Attempt, Delivery, Subscription
from runs.webhooks.services.delivery import (
    deliveries_drain,
    delivery_redeliver,
    subscription_test_send,
    subscriptions_failing_disable,
)
from runs.webhooks.services.subscriptions import subscription_create, subscription_secret_rotate
from tests.runs.webhooks.receiver import Received, Receiver, Reply
from tests.support.demo import demo_events

pytestmark = pytest.mark.django_db
HANDOFF = {"type": "handoff", "agent": "InterviewAgent", "target": "ContextVariablesAgent"}


def drain_until(done: Callable[[], bool], *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("deliveries not finished")
        deliveries_drain(budget_s=2.0)
        time.sleep(0.02)


def _all_finished() -> bool:
    return not Delivery.objects.filter(status=Delivery.Status.PENDING).exists()


def _subscribe(receiver: Receiver, events: list[str], **kwargs) -> Subscription:
    subscription, secret = subscription_create(url=receiver.url(), events=events, **kwargs)
    receiver.secret = secret
    return subscription


def _run_with_flip_and_handoff() -> str:
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(run_id=run.pk, events=[*demo_events()[:6], HANDOFF])
    return run.pk


def test_delivered_signed_with_the_payload_and_the_attempt_recorded(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped", "handoff"])
    run_id = _run_with_flip_and_handoff()
    drain_until(_all_finished)
    flip, handoff = receiver.wait(2)
    assert not flip.error and not handoff.error  # standardwebhooks verified both
    assert flip.payload["type"] == "flag_flipped"
    assert flip.payload["data"]["run_id"] == run_id
    assert flip.payload["data"]["flag"] == "interview_complete"
    assert handoff.payload["data"]["target"] == "ContextVariablesAgent"
    assert flip.message_id.startswith("msg_") and flip.message_id != handoff.message_id
    attempt = Attempt.objects.filter(delivery__event="flag_flipped").get()
    assert (attempt.ok, attempt.status_code, attempt.response) == (True, 200, "ok")
    assert Delivery.objects.filter(status="delivered").count() == 2


def test_500_then_ok_is_retried_with_the_same_id(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(500, body=b"down"), Reply(503)]
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    first, second, third = receiver.wait(3)
    assert first.message_id == second.message_id == third.message_id
    assert not third.error
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)
    assert [a.status_code for a in delivery.tries.order_by("pk")] == [500, 503, 200]


def test_429_honours_retry_after(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(429, headers={"Retry-After": "1"})]
    _run_with_flip_and_handoff()
    deliveries_drain(budget_s=2.0)
    delivery = Delivery.objects.get()
    wait = (delivery.next_attempt_at - timezone.now()).total_seconds()
    assert delivery.status == "pending" and 0.7 < wait <= 1.0
    deliveries_drain(budget_s=2.0)
    assert len(receiver.received) == 1  # not before Retry-After
    drain_until(_all_finished)
    first, second = receiver.wait(2)
    assert second.at - first.at >= 0.9
    assert first.message_id == second.message_id


def test_410_is_failed_at_once(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(410, body=b"gone")]
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("failed", 1, "HTTP 410")
    assert Subscription.objects.get().failing_since is not None
    time.sleep(0.2)
    deliveries_drain(budget_s=1.0)
    assert len(receiver.received) == 1


def test_a_redirect_is_not_followed(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(302, headers={"Location": receiver.url("/elsewhere")})]
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    assert [r.headers.get("host") for r in receiver.received] == [f"127.0.0.1:{receiver.port}"]
    assert Delivery.objects.get().status == "failed"


def test_a_slow_receiver_times_out_and_is_retried(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(200, delay_s=2.0)]  # past WEBHOOKS_READ_TIMEOUT_S (0.5 s here)
    _run_with_flip_and_handoff()
    started = time.monotonic()
    deliveries_drain(budget_s=0.1)
    assert time.monotonic() - started < 1.9  # gave up before the receiver's 2 s answer
    attempt = Attempt.objects.get()
    assert not attempt.ok and "timed out" in attempt.error
    drain_until(_all_finished)
    first, second = receiver.wait(2)
    assert first.message_id == second.message_id
    assert Delivery.objects.get().status == "delivered"


def test_in_order_per_run_a_later_event_waits_for_a_retrying_one(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped", "handoff"])
    failures = [Reply(500), Reply(500)]  # the flip's first two attempts

    def flip_fails(received: Received) -> Reply | None:
        flip = received.payload and received.payload["type"] == "flag_flipped"
        return failures.pop(0) if flip and failures else None

    receiver.rule = flip_fails
    other = run_start(workflow_name="Generator", enterprise_id="acme").run  # another lane
    _run_with_flip_and_handoff()
    event_ingest(run_id=other.pk, events=[HANDOFF])
    drain_until(_all_finished)
    by_lane: dict[str, list[str]] = {}
    for received in receiver.received:
        data = received.payload["data"]
        by_lane.setdefault(data["run_id"], []).append(data["event"])
    first_run = next(k for k in by_lane if k != other.pk)
    assert by_lane[first_run] == ["flag_flipped"] * 3 + ["handoff"]
    assert by_lane[other.pk] == ["handoff"]  # not held up by the other run's retries


def test_a_host_resolving_to_loopback_is_refused_at_send_time(generator, receiver, settings):
    host = socket.gethostname()
    if socket.gethostbyname(host) != "127.0.0.1":
        pytest.skip(f"{host} does not resolve to 127.0.0.1 here")
    _, receiver.secret = subscription_create(
        url=receiver.url(host=host), events=["flag_flipped"]
    )
    settings.WEBHOOKS_ALLOW_PRIVATE = False  # the URL passed the creation check (a name)
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and "127.0.0.1" in delivery.last_error
    assert "WEBHOOKS_ALLOW_PRIVATE" in delivery.last_error
    assert receiver.received == []
    settings.WEBHOOKS_ALLOW_PRIVATE = True  # allowed with the setting
    delivery_redeliver(delivery=delivery)
    drain_until(_all_finished)
    assert receiver.wait(1)[0].headers["host"] == f"{host}:{receiver.port}"
    assert Delivery.objects.get().status == "delivered"


def test_the_slack_format(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"], format="slack")
    run_id = _run_with_flip_and_handoff()
    drain_until(_all_finished)
    (received,) = receiver.wait(1)
    assert not received.error
    assert list(received.payload) == ["text"]
    text = received.payload["text"]
    assert "interview_complete" in text and "true" in text
    assert f"https://contextadmin.example/runs/{run_id}/?at=5" in text


def test_slack_text_from_a_run_cannot_mention_anyone_or_link(generator, receiver) -> None:
    _subscribe(receiver, ["run_started", "handoff"], format="slack")
    hostile = "<!channel> *bold* & <https://evil.example|click>"
    run = run_start(workflow_name="Generator", enterprise_id=hostile).run
    event_ingest(run_id=run.pk, events=[{**HANDOFF, "agent": "<!here>"}])
    drain_until(_all_finished)
    started, handoff = (r.payload["text"] for r in receiver.wait(2))
    link = f"https://contextadmin.example/runs/{run.pk}/?at="
    assert started == (
        f"Generator run {run.pk}: started for "
        f"&lt;!channel&gt; *bold* &amp; &lt;https://evil.example|click&gt; <{link}0|open at #0>"
    )
    assert handoff.startswith(f"Generator run {run.pk}: hand-off &lt;!here&gt; → ")
    assert handoff.endswith(f" <{link}1|open at #1>")


def test_a_non_ascii_url_is_sent_percent_encoded_even_one_stored_raw(generator, receiver) -> None:
    """Added by the command it is stored as it is sent; a row stored raw (before the rule)
    is sent the same way, instead of stopping the drain."""
    out = io.StringIO()
    call_command(
        "webhook_add", receiver.url("/ü?q=ñ"), "--events", "handoff",
        stdout=out, stderr=io.StringIO(),
    )
    receiver.secret = out.getvalue().strip()
    subscription = Subscription.objects.get()
    assert subscription.url == receiver.url("/%C3%BC?q=%C3%B1")
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    Subscription.objects.filter(pk=subscription.pk).update(url=receiver.url("/ñ"))
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    assert [(r.path, r.error) for r in receiver.wait(2)] == [
        ("/%C3%BC?q=%C3%B1", ""), ("/%C3%B1", ""),
    ]
    assert list(Delivery.objects.values_list("status", flat=True)) == ["delivered"] * 2


def test_a_url_stored_with_a_space_fails_at_once_and_holds_up_nothing(generator, receiver):
    _subscribe(receiver, ["flag_flipped", "handoff"])
    Subscription.objects.update(url=receiver.url("/x y"))  # stored raw, before the rule
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    for delivery in Delivery.objects.all():
        assert (delivery.status, delivery.attempts) == ("failed", 1)
        assert delivery.last_error.startswith("url: must not contain spaces")
    assert receiver.received == []


def test_an_unexpected_error_is_a_failed_attempt_and_holds_up_no_one(generator, receiver):
    broken = _subscribe(receiver, ["handoff"])
    Subscription.objects.filter(pk=broken.pk).update(secret="")  # a bad row: cannot sign
    other = Receiver().start()
    try:
        other.secret = subscription_create(url=other.url(), events=["handoff"])[1]
        _run_with_flip_and_handoff()
        deliveries_drain(budget_s=0.5)
        assert not other.wait(1)[0].error  # the other subscription's delivery went out
        failed = Delivery.objects.get(subscription=broken)
        assert failed.status == "pending" and failed.attempts >= 1
        assert failed.last_error.startswith("unexpected error: EmptyWebhookSecretError")
        assert Attempt.objects.filter(delivery=failed, error=failed.last_error).exists()
        receiver.secret = subscription_secret_rotate(subscription=broken)  # the operator's fix
        drain_until(_all_finished)
        assert not receiver.wait(1)[0].error
        assert Delivery.objects.get(subscription=broken).status == "delivered"
    finally:
        other.stop()


def test_a_retry_after_past_the_window_is_cut_to_its_end(generator, receiver, settings) -> None:
    settings.WEBHOOKS_RETRY_FOR_S = 1.0
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(429, headers={"Retry-After": "99999999999"})]
    _run_with_flip_and_handoff()
    deliveries_drain(budget_s=0.5)
    delivery = Delivery.objects.get()
    window_end = delivery.created_at + dt.timedelta(seconds=1.0)
    assert delivery.status == "pending"
    assert abs((delivery.next_attempt_at - window_end).total_seconds()) < 0.01
    drain_until(_all_finished)
    assert len(receiver.wait(2)) == 2
    assert Delivery.objects.get().status == "delivered"


@pytest.mark.parametrize(
    "value", ["²", "9" * 400, "Fri, 01 Jan 99999999999999999999 00:00:00 GMT"]
)
def test_a_garbled_retry_after_is_retried_within_the_window(
    generator, receiver, settings, value
) -> None:
    settings.WEBHOOKS_RETRY_FOR_S = 2.0
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(429, headers={"Retry-After": value})]
    _run_with_flip_and_handoff()
    deliveries_drain(budget_s=0.2)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error) == ("pending", "HTTP 429")
    assert delivery.next_attempt_at <= delivery.created_at + dt.timedelta(seconds=2.0)
    drain_until(_all_finished)
    assert Delivery.objects.get().status == "delivered"


def test_first_tried_past_its_window_it_gives_up_after_1_attempt(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"])
    receiver.default = Reply(503)
    _run_with_flip_and_handoff()
    Delivery.objects.update(created_at=timezone.now() - dt.timedelta(days=2))  # workers down
    drain_until(_all_finished)
    assert Delivery.objects.get().last_error == "HTTP 503; gave up after 1 attempt"


def test_the_response_kept_is_capped_at_500_bytes(generator, receiver) -> None:
    _subscribe(receiver, ["flag_flipped"])
    receiver.replies = [Reply(200, body=b"x" * 100_000)]
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    assert len(Attempt.objects.get().response) == 500


def test_past_the_retry_window_the_delivery_is_failed(generator, receiver, settings) -> None:
    settings.WEBHOOKS_RETRY_FOR_S = 0.3
    _subscribe(receiver, ["flag_flipped"])
    receiver.default = Reply(503)
    _run_with_flip_and_handoff()
    drain_until(_all_finished)
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and "gave up" in delivery.last_error
    assert delivery.attempts >= 2
    assert len({r.message_id for r in receiver.received}) == 1


def test_failing_for_days_switches_the_subscription_off(generator, settings) -> None:
    settings.WEBHOOKS_DISABLE_AFTER_DAYS = 3
    failing, _ = subscription_create(url="https://h.example/a", events=["handoff"])
    recent, _ = subscription_create(url="https://h.example/b", events=["handoff"])
    now = timezone.now()
    Subscription.objects.filter(pk=failing.pk).update(failing_since=now - dt.timedelta(days=4))
    Subscription.objects.filter(pk=recent.pk).update(failing_since=now - dt.timedelta(days=1))
    assert subscriptions_failing_disable() == 1
    failing.refresh_from_db()
    assert not failing.enabled and "3 days" in failing.disabled_reason
    assert Subscription.objects.get(pk=recent.pk).enabled


def test_a_test_event_and_a_redelivery_keep_their_ids(generator, receiver) -> None:
    subscription = _subscribe(receiver, ["handoff"])
    delivery = subscription_test_send(subscription=subscription)
    drain_until(_all_finished)
    delivery_redeliver(delivery=delivery)
    drain_until(_all_finished)
    first, second = receiver.wait(2)
    assert json.loads(first.body)["type"] == "test"
    assert first.message_id == second.message_id == delivery.message_id


def _certificate(directory: Path, host: str) -> tuple[str, str]:
    """A self-signed certificate for ``host`` (Debian's openssl)."""
    cert, key = directory / f"{host}.pem", directory / f"{host}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={host}",
         "-addext", f"subjectAltName=DNS:{host}"],
        check=True, capture_output=True,
    )
    return str(cert), str(key)


def test_https_is_verified_against_the_host_name(generator, tmp_path, monkeypatch) -> None:
    """TLS over the connection to the checked address still checks the URL's host name."""
    cert = _certificate(tmp_path, "localhost")
    other = _certificate(tmp_path, "other.example")
    monkeypatch.setenv("SSL_CERT_FILE", cert[0])  # trust the test's own certificate only
    good, wrong = Receiver(tls=cert).start(), Receiver(tls=other).start()
    try:
        good.secret = subscription_create(url=good.url(host="localhost"), events=["handoff"])[1]
        wrong.secret = subscription_create(url=wrong.url(host="localhost"), events=["handoff"])[1]
        _run_with_flip_and_handoff()
        deliveries_drain(budget_s=2.0)
        (received,) = good.wait(1)
        assert not received.error and received.payload["type"] == "handoff"
        failed = Attempt.objects.get(delivery__subscription__url=wrong.url(host="localhost"))
        assert not failed.ok and "CERTIFICATE_VERIFY_FAILED" in failed.error
        assert wrong.received == []
    finally:
        good.stop()
        wrong.stop()
