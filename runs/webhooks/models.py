"""Webhook subscriptions, their outbox of deliveries, each delivery's attempts, and the marks
the periodic task keeps (stale runs raised once, its own schedule)."""

from __future__ import annotations

import datetime as dt

from django.db import models

from runs.models import workflow_scope

EVENTS = (
    "flag_flipped",
    "handoff",
    "run_started",
    "run_ended",
    "run_stale",
    "warning",
    "version_published",
)
FORMATS = ("standard", "slack")


class Subscription(models.Model):
    """Where to send which events; signed with its own secret (Standard Webhooks)."""

    Format = models.TextChoices("Format", [(f.upper(), f) for f in FORMATS])

    url = models.CharField(max_length=2000)  # the one rule: services.subscriptions.url_clean
    workflow = workflow_scope(
        related_name="webhook_subscriptions",
        help_text="only this workflow's events (empty: every workflow)",
    )
    events = models.JSONField(default=list, help_text="the event names it receives")
    flags = models.JSONField(
        default=list, blank=True, help_text="flag_flipped only for these flags (empty: all)"
    )
    end_statuses = models.JSONField(
        default=list, blank=True, help_text="run_ended only for these statuses (empty: all)"
    )
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.STANDARD)
    enabled = models.BooleanField(default=True)
    secret = models.CharField(max_length=100, editable=False)  # whsec_…: signs, never shown
    # After a rotation the old secret signs beside the new one until this time (Standard
    # Webhooks' several signatures), so receivers switch over without a failed delivery.
    previous_secret = models.CharField(max_length=100, blank=True, editable=False)
    previous_secret_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    failing_since = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="the first failure since the last success"
    )
    disabled_reason = models.CharField(max_length=300, blank=True, editable=False)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.url

    def signing_secrets(self, *, now: dt.datetime) -> list[str]:
        """The secrets a request made at ``now`` is signed with: the secret, and the old one
        while a rotation's overlap lasts."""
        until = self.previous_secret_until
        if self.previous_secret and until is not None and now < until:
            return [self.secret, self.previous_secret]
        return [self.secret]


class Delivery(models.Model):
    """One event for one subscription: a row of the outbox, written in the transaction of
    what caused it; ``message_id`` is the webhook-id every attempt carries."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    subscription = models.ForeignKey(
        Subscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    lane = models.CharField(max_length=120, help_text="in order within a lane: a run, a workflow")
    event = models.CharField(max_length=32)
    message_id = models.CharField(max_length=40, unique=True)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    lease_until = models.DateTimeField(null=True, blank=True)  # a worker is sending it
    # Queued: the retry window (WEBHOOKS_RETRY_FOR_S) counts from here; a redelivery moves it.
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["status", "subscription", "lane"], name="delivery_pending_lane"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.message_id}"

    @property
    def event_at(self) -> dt.datetime:
        """When the event happened: its payload's ``timestamp`` (a redelivery keeps it)."""
        try:
            return dt.datetime.fromisoformat(self.payload["timestamp"])
        except (KeyError, TypeError, ValueError):
            return self.created_at

    @property
    def redelivered_at(self) -> dt.datetime | None:
        """When it was last queued again by hand (Redeliver), if it was."""
        moved = self.created_at - self.event_at > dt.timedelta(seconds=1)
        return self.created_at if moved else None


class Attempt(models.Model):
    """One try at sending a delivery: what the receiver answered, how long it took."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    response = models.CharField(max_length=500, blank=True)  # the body's first 500 bytes
    error = models.CharField(max_length=300, blank=True)
    ok = models.BooleanField(default=False)

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"{self.status_code or self.error} after {self.latency_ms} ms"


class StaleRun(models.Model):
    """A run already reported stale: ``run_stale`` is raised once per run."""

    run = models.OneToOneField("runs.Run", on_delete=models.CASCADE, primary_key=True)
    at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"run {self.run_id} stale at {self.at}"


class Tick(models.Model):
    """The periodic task's schedule: a tick runs when it claims ``next_at``, so however many
    workers start one, a single chain of ticks stays scheduled."""

    name = models.CharField(max_length=40, primary_key=True)
    next_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} next at {self.next_at}"
