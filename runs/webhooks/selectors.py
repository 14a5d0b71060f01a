"""Reads for the admin and the front page: recent deliveries, failures, switched-off hooks."""

from __future__ import annotations

import datetime as dt

from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from runs.webhooks.models import Attempt, Delivery, Subscription

RECENT_DELIVERIES = 20
ATTEMPTS_SHOWN = 5


def subscription_recent_deliveries(*, subscription: Subscription) -> list[Delivery]:
    """The latest deliveries, newest first, each with its latest attempts."""
    attempts = Attempt.objects.order_by("-pk")
    rows = (
        Delivery.objects.filter(subscription=subscription)
        .order_by("-pk")
        .prefetch_related(Prefetch("tries", queryset=attempts))[:RECENT_DELIVERIES]
    )
    return list(rows)


def subscription_failures_24h(*, subscription: Subscription) -> int:
    """Failed attempts in the last 24 hours."""
    since = timezone.now() - dt.timedelta(hours=24)
    return Attempt.objects.filter(
        delivery__subscription=subscription, ok=False, at__gte=since
    ).count()


def subscriptions_switched_off() -> QuerySet[Subscription]:
    """Subscriptions switched off because they kept failing (the front page warns)."""
    return Subscription.objects.filter(enabled=False).exclude(disabled_reason="").defer("secret")
