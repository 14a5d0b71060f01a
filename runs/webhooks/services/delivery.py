"""Sending the outbox: attempts, retries, order.

Deliveries go out in order per lane (a run, or a workflow's versions) and subscription: only
the oldest pending delivery of a lane is sent, so a later event waits while an earlier one is
retrying. A worker claims that delivery with a lease (one conditional UPDATE, on SQLite and
PostgreSQL alike); a worker killed mid-request leaves the lease to expire, and the next drain
sends the same delivery again, with the same webhook-id (at least once).

Retries: a network error, a timeout, 429 or a 5xx is retried after an exponential backoff
with jitter (WEBHOOKS_BACKOFF_BASE_S, x4 a time, at most 6 hours apart), or after the answer's
``Retry-After`` when that is longer, never past the end of the retry window
(WEBHOOKS_RETRY_FOR_S since the event): the last retry is made there, and a failure then fails
the delivery. An unexpected error while sending counts as a failed attempt and is retried
alike. Any other answer below 200 or from 300 is failed at once; a refused URL or address too.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import random
import time
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Min, Q
from django.utils import timezone
from django_tasks import task

from runs.webhooks.models import Attempt, Delivery, Subscription
from runs.webhooks.services import sending
from runs.webhooks.services.payloads import body_render, headers_signed, message_id_new

logger = logging.getLogger(__name__)

BACKOFF_FACTOR = 4
BACKOFF_MAX_S = 6 * 3600
LEASE_FACTOR = 2  # a lease lasts twice the request's deadline (sending.deadline_s)
DRAIN_BUDGET_S = 30.0  # one task sends for at most this long, then hands over to the next


def backoff_s(attempts: int) -> float:
    """The delay before retry number ``attempts`` (1, 2, ...): exponential, with jitter."""
    base = settings.WEBHOOKS_BACKOFF_BASE_S * BACKOFF_FACTOR ** max(0, attempts - 1)
    return min(base, BACKOFF_MAX_S) * random.uniform(0.8, 1.2)


def retry_after_s(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None for
    anything else, so the backoff applies. The caller caps it at the retry window."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - timezone.now()).total_seconds())


@task()
def deliveries_send() -> int:
    """The task a worker runs: send what is due (enqueued with the deliveries it sends)."""
    return deliveries_drain()


def deliveries_kick(*, at: dt.datetime | None = None) -> None:
    """Enqueue ``deliveries_send`` (now, or at ``at``) in the caller's transaction."""
    (deliveries_send.using(run_after=at) if at is not None else deliveries_send).enqueue()


def lane_heads(*, now: dt.datetime) -> list[Delivery]:
    """The oldest pending delivery of each lane of each enabled subscription, if due and
    not leased."""
    heads = (
        Delivery.objects.filter(status=Delivery.Status.PENDING, subscription__enabled=True)
        .values("subscription_id", "lane")
        .annotate(head=Min("id"))
        .values_list("head", flat=True)
    )
    due = Delivery.objects.filter(pk__in=list(heads), next_attempt_at__lte=now).select_related(
        "subscription"
    )
    return [d for d in due.order_by("pk") if d.lease_until is None or d.lease_until <= now]


def _claim(delivery: Delivery, *, now: dt.datetime) -> bool:
    """Lease the delivery for this worker if it is still pending, due and not leased (another
    worker may have sent it since the lane heads were read); then read it again, so the
    attempt counts from what that worker stored. False when it is not this worker's."""
    lease = sending.deadline_s() * LEASE_FACTOR
    claimed = (
        Delivery.objects.filter(
            pk=delivery.pk, status=Delivery.Status.PENDING, next_attempt_at__lte=now
        )
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now))
        .update(lease_until=now + dt.timedelta(seconds=lease))
    )
    if claimed:
        delivery.refresh_from_db(
            fields=["attempts", "created_at", "next_attempt_at", "lease_until", "status"]
        )
    return bool(claimed)


def deliveries_drain(*, budget_s: float = DRAIN_BUDGET_S) -> int:
    """Send every due lane head, again and again until none is due or the budget is spent.
    Returns how many attempts were made."""
    started = time.monotonic()
    attempts = 0
    while time.monotonic() - started < budget_s:
        now = timezone.now()
        heads = lane_heads(now=now)
        sent = 0
        for delivery in heads:
            if time.monotonic() - started >= budget_s:
                break
            if _claim(delivery, now=timezone.now()):
                delivery_attempt(delivery=delivery)
                sent += 1
        attempts += sent
        if not sent:
            return attempts
    deliveries_kick()  # more is due: the next task goes on
    return attempts


@dataclass
class Outcome:
    ok: bool
    retry: bool
    status_code: int | None = None
    response: str = ""
    error: str = ""
    latency_ms: int = 0
    wait_s: float | None = None


def _send(delivery: Delivery) -> Outcome:
    """One attempt's outcome. Whatever goes wrong is an outcome, never an exception: one bad
    row must not stop the drain and hold up every delivery after it."""
    subscription = delivery.subscription
    started = time.monotonic()
    try:
        body = body_render(delivery.payload, format=subscription.format)
        at = timezone.now()
        headers = headers_signed(
            secrets=subscription.signing_secrets(now=at),
            message_id=delivery.message_id,
            body=body,
            at=at,
        )
        answer = sending.post(url=subscription.url, body=body, headers=headers)
    except (sending.SendRefused, sending.SendFailed) as exc:
        return Outcome(
            ok=False,
            retry=isinstance(exc, sending.SendFailed),
            error=_storable(str(exc), 300, one_line=True),
            latency_ms=int((time.monotonic() - started) * 1000),
        )
    except Exception as exc:  # a bug or a bad row: retried like a network error, and logged
        logger.exception(
            "webhook %s to subscription %s: unexpected error", delivery.message_id,
            delivery.subscription_id,
        )
        return Outcome(
            ok=False,
            retry=True,
            error=_storable(f"unexpected error: {type(exc).__name__}: {exc}", 300, one_line=True),
            latency_ms=int((time.monotonic() - started) * 1000),
        )
    text = _storable(answer.body.decode("utf-8", errors="replace"), 500)
    status = answer.status
    return Outcome(
        ok=200 <= status < 300,
        retry=status == 429 or status >= 500,
        status_code=status,
        response=text,
        latency_ms=answer.latency_ms,
        wait_s=retry_after_s(answer.retry_after) if status in (429, 503) else None,
        error="" if 200 <= status < 300 else f"HTTP {status}",
    )


def _storable(text: str, limit: int, *, one_line: bool = False) -> str:
    """A receiver's text (its answer, or an error quoting its status line) as every database
    stores it: a NUL, which PostgreSQL refuses in text, shown as U+FFFD. Stored raw, it failed
    the attempt's row after the request was sent, so the delivery was never marked and was
    sent again at every lease's end, for ever, holding up its run's later events. An error
    (``one_line``) is also logged: every other unprintable character (CR, LF, escapes, bidi
    overrides) is shown as U+FFFD too, so a receiver cannot write lines into the log."""
    if one_line:
        text = "".join(c if c.isprintable() else "\ufffd" for c in text.strip()[:limit])
    return text[:limit].replace("\x00", "\ufffd")


def delivery_attempt(*, delivery: Delivery) -> Attempt:
    """Send a claimed delivery once; record the attempt; schedule a retry or finish it. The
    outcome is stored only while this worker still holds the lease: one that lost it (a
    redelivery, a worker stalled past it) leaves the delivery to whoever holds it now."""
    held = delivery.lease_until
    outcome = _send(delivery)
    now = timezone.now()
    attempt = Attempt.objects.create(
        delivery=delivery,
        status_code=outcome.status_code,
        latency_ms=outcome.latency_ms,
        response=outcome.response,
        error=outcome.error,
        ok=outcome.ok,
    )
    delivery.attempts += 1
    delivery.lease_until = None
    delivery.last_error = outcome.error
    retry_at = None
    if outcome.ok:
        delivery.status = Delivery.Status.DELIVERED
        delivery.finished_at = now
    elif outcome.retry:
        give_up_at = delivery.created_at + dt.timedelta(seconds=settings.WEBHOOKS_RETRY_FOR_S)
        left_s = (give_up_at - now).total_seconds()
        if left_s <= 0:
            delivery.status = Delivery.Status.FAILED
            delivery.finished_at = now
            tries = f"{delivery.attempts} attempt{'s' if delivery.attempts != 1 else ''}"
            delivery.last_error = f"{outcome.error}; gave up after {tries}"
        else:  # the last retry is at the window's end, however long a wait was asked for
            # A Retry-After never shortens the backoff: "0" or a past date would otherwise
            # have the receiver asked again at once, in a loop, for as long as it answers so.
            # The backoff counts the attempts of this window: after a redelivery it starts
            # again from WEBHOOKS_BACKOFF_BASE_S, not from the hours its last retries waited.
            window = Attempt.objects.filter(delivery=delivery, at__gte=delivery.created_at)
            wait = max(outcome.wait_s or 0.0, backoff_s(window.count()))
            retry_at = now + dt.timedelta(seconds=min(wait, left_s))
            delivery.next_attempt_at = retry_at
    else:
        delivery.status = Delivery.Status.FAILED
        delivery.finished_at = now
    fields = ("attempts", "lease_until", "last_error", "status", "finished_at", "next_attempt_at")
    stored = Delivery.objects.filter(pk=delivery.pk, lease_until=held).update(
        **{name: getattr(delivery, name) for name in fields}
    )
    if not stored:
        logger.warning(
            "webhook %s to subscription %s: lease lost while sending; outcome not stored",
            delivery.message_id,
            delivery.subscription_id,
        )
        return attempt
    if retry_at is not None:
        deliveries_kick(at=retry_at)
    _subscription_health(delivery.subscription, ok=outcome.ok, now=now)
    if not outcome.ok:
        logger.info(
            "webhook %s to subscription %s: %s", delivery.message_id,
            delivery.subscription_id, outcome.error,
        )
    return attempt


def _subscription_health(subscription: Subscription, *, ok: bool, now: dt.datetime) -> None:
    """Track how long the subscription has been failing (cleared by a success)."""
    if ok and subscription.failing_since is not None:
        Subscription.objects.filter(pk=subscription.pk).update(failing_since=None)
    elif not ok:
        Subscription.objects.filter(pk=subscription.pk, failing_since__isnull=True).update(
            failing_since=now
        )


def subscriptions_failing_disable(*, now: dt.datetime | None = None) -> int:
    """Switch off subscriptions failing for WEBHOOKS_DISABLE_AFTER_DAYS days in a row."""
    now = now or timezone.now()
    days = settings.WEBHOOKS_DISABLE_AFTER_DAYS
    cutoff = now - dt.timedelta(days=days)
    return Subscription.objects.filter(enabled=True, failing_since__lte=cutoff).update(
        enabled=False,
        disabled_reason=f"switched off: every delivery failed for {days} days in a row",
    )


def delivery_redeliver(*, delivery: Delivery) -> Delivery:
    """Send a delivery again (same webhook-id), now, whatever became of it."""
    Delivery.objects.filter(pk=delivery.pk).update(
        status=Delivery.Status.PENDING,
        next_attempt_at=timezone.now(),
        created_at=timezone.now(),  # a new retry window (the payload keeps the event's time)
        finished_at=None,
        lease_until=None,
    )
    deliveries_kick()
    delivery.refresh_from_db()
    return delivery


def subscription_test_send(*, subscription: Subscription) -> Delivery:
    """Queue a test event for the subscription (its own lane: it waits for nothing)."""
    payload = {
        "type": "test",
        "timestamp": timezone.now().isoformat(timespec="milliseconds"),
        "data": {"event": "test", "text": "a test event from contextadmin", "url": None},
    }
    delivery = Delivery.objects.create(
        subscription=subscription,
        lane=f"test:{message_id_new()}",
        event="test",
        message_id=message_id_new(),
        payload=payload,
        next_attempt_at=timezone.now(),
    )
    deliveries_kick()
    return delivery
