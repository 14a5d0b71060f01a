"""Runs, their append-only event log, derived flips, replay snapshots and API tokens."""

from __future__ import annotations

import uuid

from contextadmin_sdk.engine import ENVIRONMENTS, RUN_STATUSES
from django.db import models


def new_run_id() -> str:
    return uuid.uuid4().hex


def workflow_scope(*, related_name: str, help_text: str) -> models.ForeignKey:
    """An optional scope to one workflow (empty: every workflow), gone with the workflow: an
    API token's, a webhook subscription's."""
    return models.ForeignKey(
        "contextadmin.Workflow",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name=related_name,
        help_text=help_text,
    )


class Run(models.Model):
    """One workflow run; its definitions are pinned as exported when it started."""

    # The engine owns the lifecycle and the environments; the model only stores them.
    Status = models.TextChoices("Status", [(status.upper(), status) for status in RUN_STATUSES])
    Environment = models.TextChoices(
        "Environment", [(environment.upper(), environment) for environment in ENVIRONMENTS]
    )

    id = models.CharField(primary_key=True, max_length=64, default=new_run_id, editable=False)
    workflow = models.ForeignKey(
        "contextadmin.Workflow", null=True, on_delete=models.SET_NULL, related_name="runs"
    )
    workflow_name = models.CharField(max_length=100)  # indexed with started_at (Meta)
    definitions = models.JSONField(help_text="context_variables.json as exported at start")
    definitions_hash = models.CharField(max_length=64)
    workflow_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="the version number pinned at start (None: an unversioned workflow, or "
        "definitions not published here)",
    )
    DefinitionsSource = models.TextChoices(
        "DefinitionsSource",
        [
            ("PUBLISHED", "published"),  # the runtime sent none: the version published at start
            ("VERSION", "version"),  # the runtime ran with a version this server has
            ("RUNTIME", "runtime"),  # the runtime's own definitions, not published here
        ],
    )
    definitions_source = models.CharField(
        max_length=16, choices=DefinitionsSource.choices, default=DefinitionsSource.PUBLISHED
    )
    definitions_declared = models.JSONField(
        default=dict,
        blank=True,
        help_text='the version key the runtime\'s definitions carried: {"number", "digest"}',
    )
    enterprise_id = models.CharField(max_length=200)  # indexed with started_at (Meta)
    environment = models.CharField(
        max_length=20, choices=Environment.choices, default=Environment.DEVELOPMENT
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    runtime = models.JSONField(
        default=dict, blank=True, help_text='what reported the run: {"framework", "version", "sdk"}'
    )
    provenance = models.JSONField(default=dict)
    warnings = models.JSONField(default=list)
    state = models.JSONField(default=dict, help_text="the live RunState as of last_seq")
    last_seq = models.PositiveBigIntegerField(default=0)
    flip_count = models.PositiveIntegerField(default=0)
    token = models.ForeignKey(
        "runs.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    started_at = models.DateTimeField(auto_now_add=True)  # indexed with id (Meta)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            # A runs list page (newest first, keyset on started_at then id), filtered by
            # workflow or enterprise or not, and the front page's last run of each workflow
            # walk one of these in order: no sort of every run the filter matches, whatever
            # their number.
            models.Index(fields=["started_at", "id"], name="run_started"),
            models.Index(fields=["workflow_name", "started_at", "id"], name="run_workflow_started"),
            models.Index(
                fields=["enterprise_id", "started_at", "id"], name="run_enterprise_started"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_name} run {self.id}"


class RunEvent(models.Model):
    """One event of a run's log; ``result`` keeps the flips and changes it caused."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=32)
    agent = models.CharField(max_length=200, blank=True)
    payload = models.JSONField()
    result = models.JSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"


class Flip(models.Model):
    """A derived flag flipped by an event (its cause names the trigger and the event)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="flips")
    variable = models.CharField(max_length=64)
    value = models.JSONField()
    seq = models.PositiveBigIntegerField()
    trigger_index = models.IntegerField(null=True)
    cause = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "seq", "id"]
        indexes = [models.Index(fields=["run", "seq"], name="flip_run_seq")]

    def __str__(self) -> str:
        return f"{self.variable}={self.value} at #{self.seq}"


class RunSnapshot(models.Model):
    """The state after ``seq`` events, so replay to any seq reads a bounded tail of the log."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="snapshots")
    seq = models.PositiveBigIntegerField()
    state = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="runsnapshot_unique_seq")
        ]

    def __str__(self) -> str:
        return f"snapshot at #{self.seq}"


class ApiToken(models.Model):
    """A runtime's bearer token: only a SHA-256 of the secret is stored, the secret shown once."""

    name = models.CharField(max_length=100, unique=True)
    prefix = models.CharField(max_length=12, db_index=True, editable=False)
    secret_hash = models.CharField(max_length=64, editable=False)
    workflow = workflow_scope(
        related_name="api_tokens",
        help_text="when set, the token may only start and report runs of this workflow",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
