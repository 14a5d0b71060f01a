"""Reads for the admin and the front page: recent deliveries, failures, switched-off hooks."""

from __future__ import annotations

import datetime as dt

from django.db.models import Exists, OuterRef, Prefetch, QuerySet
from django.utils import timezone

from runs.webhooks.models import Attempt, Delivery, Subscription

RECENT_DELIVERIES = 20
ATTEMPTS_SHOWN = 5


def subscription_recent_deliveries(*, subscription: Subscription) -> list[Delivery]:
    """The latest deliveries, newest first, each with its latest attempts and, when pending,
    whether an earlier event of its lane holds it back (deliveries go in order per run)."""
    attempts = Attempt.objects.order_by("-pk")
    earlier = Delivery.objects.filter(
        subscription=OuterRef("subscription"),
        lane=OuterRef("lane"),
        status=Delivery.Status.PENDING,
        pk__lt=OuterRef("pk"),
    )
    rows = (
        Delivery.objects.filter(subscription=subscription)
        .annotate(held_back=Exists(earlier))
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
