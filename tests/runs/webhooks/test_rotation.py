"""Rotating a subscription's signing secret: for a day each request carries a signature by the
new secret and one by the old (Standard Webhooks' several signatures), so a receiver verifying
with either, the standardwebhooks library as receivers use it, accepts it; after the day, or
when the operator revokes the old secret (it leaked), only the new one signs. Against a real
receiver, and through the admin's two buttons."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook, WebhookVerificationError

from runs.webhooks.models import Delivery, Subscription
from runs.webhooks.services.delivery import (
    deliveries_drain,
    delivery_redeliver,
    subscription_test_send,
)
from runs.webhooks.services.subscriptions import subscription_create, subscription_secret_rotate
from tests.runs.webhooks.receiver import Receiver

pytestmark = pytest.mark.django_db


def verifies(secret: str, receiver: Receiver) -> bool:
    """Whether a receiver holding ``secret`` accepts the last request (as its docs say)."""
    request = receiver.received[-1]
    try:
        Webhook(secret).verify(request.body, request.headers)
    except WebhookVerificationError:
        return False
    return True


def sent_once_more(receiver: Receiver, subscription: Subscription) -> None:
    """One request more to the receiver: a test event, sent now."""
    count = len(receiver.received)
    subscription_test_send(subscription=subscription)
    deliveries_drain(budget_s=1.0)
    receiver.wait(count + 1)


def test_a_rotated_secret_signs_beside_the_new_one_for_a_day(receiver: Receiver) -> None:
    subscription, old = subscription_create(url=receiver.url(), events=["handoff"])
    new = receiver.secret = subscription_secret_rotate(subscription=subscription)
    sent_once_more(receiver, subscription)
    assert receiver.received[-1].headers["webhook-signature"].count("v1,") == 2
    assert verifies(old, receiver) and verifies(new, receiver)

    Subscription.objects.update(previous_secret_until=timezone.now() - dt.timedelta(seconds=1))
    subscription.refresh_from_db()
    delivery_redeliver(delivery=Delivery.objects.get())  # a retry, after the day
    deliveries_drain(budget_s=1.0)
    receiver.wait(2)
    assert receiver.received[-1].headers["webhook-signature"].count("v1,") == 1
    assert verifies(new, receiver) and not verifies(old, receiver)


def test_revoking_stops_the_old_secret_at_once(receiver: Receiver) -> None:
    subscription, old = subscription_create(url=receiver.url(), events=["handoff"])
    new = receiver.secret = subscription_secret_rotate(subscription=subscription, revoke=True)
    sent_once_more(receiver, subscription)
    assert verifies(new, receiver) and not verifies(old, receiver)


@pytest.mark.parametrize(
    ("button", "says"),
    [
        pytest.param({}, "The old secret signs beside the new one until ", id="rotate"),
        pytest.param({"revoke": "1"}, "The old secret was revoked", id="revoke"),
    ],
)
def test_the_admin_rotates_with_a_day_of_overlap_or_revokes(
    admin_client, button: dict[str, str], says: str
) -> None:
    subscription, old = subscription_create(url="https://h.example/x", events=["handoff"])
    page = admin_client.post(reverse("admin:webhooks_rotate", args=[subscription.pk]), button)
    subscription.refresh_from_db()
    assert subscription.secret != old and subscription.secret in page.content.decode()
    assert says in page.content.decode()
    signing = subscription.signing_secrets(now=timezone.now())
    assert signing == ([subscription.secret] if button else [subscription.secret, old])
    if not button:
        left = subscription.previous_secret_until - timezone.now()
        assert dt.timedelta(hours=23, minutes=59) < left <= dt.timedelta(hours=24)
