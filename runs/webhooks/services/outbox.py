"""The transactional outbox: deliveries written in the transaction of what caused them.

Receivers of ``runs.signals.events_stored`` and ``run_stored`` (inside the ingest batch's or
the run start's transaction) and of ``contextadmin.signals.version_published`` (inside the
publishing transaction) write one ``Delivery`` per event and subscription that wants it, and
enqueue the task that sends them (``delivery.deliveries_send``), also in that transaction: the rows
and the task commit with the events or not at all. A worker that dies, or a task lost, costs
nothing: the periodic tick sends whatever is still pending.

Ingest pays for this only when a subscription is active: one cached read, then a filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from runs.models import Flip, Run, RunEvent
from runs.webhooks.models import Delivery, Subscription
from runs.webhooks.services.delivery import deliveries_kick
from runs.webhooks.services.payloads import (
    message_id_new,
    run_payload,
    text_preview,
    value_capped,
    version_payload,
)
from runs.webhooks.services.subscriptions import subscriptions_active, subscriptions_cache_clear

Candidate = tuple[str, int, dict[str, Any]]  # event name, seq, the event's own fields


def wants(subscription: Subscription, event: str, data: dict[str, Any]) -> bool:
    """Whether the subscription takes this event (its events and filters)."""
    if event not in subscription.events:
        return False
    if event == "flag_flipped" and subscription.flags:
        return data.get("flag") in subscription.flags
    if event == "run_ended" and subscription.end_statuses:
        return data.get("status") in subscription.end_statuses
    return True


def subscriptions_for_workflow(workflow_id: int | None) -> list[Subscription]:
    return [
        s
        for s in subscriptions_active()
        if s.workflow_id is None or (workflow_id is not None and s.workflow_id == workflow_id)
    ]


def deliveries_write(
    *, subscriptions: Sequence[Subscription], lane: str, items: Sequence[tuple[str, dict]]
) -> int:
    """Write one delivery per (subscription, item) the subscription wants; enqueue the send.
    ``items`` are (event, payload) in the order they happened. Returns how many were written.

    The subscriptions come from this process's cache, up to a second old: one deleted since
    by another process is dropped here (read in this transaction), or its rows would fail
    the whole transaction, the events that caused them included."""
    now = timezone.now()
    wanted = [
        (subscription, event, payload)
        for subscription in subscriptions
        for event, payload in items
        if wants(subscription, event, payload["data"])
    ]
    if not wanted:
        return 0
    ids = {subscription.pk for subscription, _, _ in wanted}
    existing = set(Subscription.objects.filter(pk__in=ids).values_list("pk", flat=True))
    rows = [
        Delivery(
            subscription=subscription,
            lane=lane,
            event=event,
            message_id=message_id_new(),
            payload=payload,
            next_attempt_at=now,
        )
        for subscription, event, payload in wanted
        if subscription.pk in existing
    ]
    if rows:
        Delivery.objects.bulk_create(rows)
        deliveries_kick()
    return len(rows)


def run_candidates(events: Sequence[RunEvent], flips: Sequence[Flip]) -> list[Candidate]:
    """The webhook events in a batch's rows, in seq order (an event before its flips)."""
    found: list[tuple[int, int, Candidate]] = []
    for event in events:
        payload = event.payload
        if event.type == "handoff":
            fields = {k: payload.get(k) for k in ("agent", "target", "rule")}
            found.append((event.seq, 0, ("handoff", event.seq, fields)))
        elif event.type == "warning":
            # A refused change, as the runtime records it (who tried, the variable, the rule).
            text = payload.get("text") or payload.get("rule") or payload.get("name") or ""
            value, cut = value_capped(payload.get("value"))
            fields = {
                "text": text_preview(text),
                **{k: payload.get(k) for k in ("agent", "name")},
                "value": value,
                "rule": payload.get("rule"),
                **({"value_truncated": True} if cut else {}),
            }
            found.append((event.seq, 0, ("warning", event.seq, fields)))
        elif event.type == "run_status" and payload.get("status") in RUN_ENDED_STATUSES:
            found.append((event.seq, 2, ("run_ended", event.seq, {"status": payload["status"]})))
    for flip in flips:
        fields = {
            "flag": flip.variable,
            "value": flip.value,
            "cause": flip.cause,
            "trigger_index": flip.trigger_index,
        }
        found.append((flip.seq, 1, ("flag_flipped", flip.seq, fields)))
    found.sort(key=lambda item: (item[0], item[1]))
    return [candidate for _, _, candidate in found]


def events_stored_receive(
    sender: Any,
    *,
    run: Run,
    events: Sequence[RunEvent],
    flips: Sequence[Flip],
    replay: bool = False,
    **kwargs: Any,
) -> None:
    """Receive ``events_stored`` (inside the batch's transaction): the batch's deliveries; none
    for a replay (an imported past run must not page anyone again)."""
    if replay or not subscriptions_active():
        return
    subscriptions = subscriptions_for_workflow(run.workflow_id)
    if not subscriptions:
        return
    candidates = run_candidates(events, flips)
    if candidates:
        items = [(name, run_payload(run, event=name, seq=seq, **f)) for name, seq, f in candidates]
        deliveries_write(subscriptions=subscriptions, lane=run.pk, items=items)


def run_stored_receive(sender: Any, *, run: Run, **kwargs: Any) -> None:
    """Receive ``run_stored`` (inside run_start's transaction): ``run_started``."""
    subscriptions = subscriptions_for_workflow(run.workflow_id)
    if subscriptions:
        payload = run_payload(run, event="run_started", seq=0)
        deliveries_write(
            subscriptions=subscriptions, lane=run.pk, items=[("run_started", payload)]
        )


def version_published_receive(sender: Any, *, workflow: Any, version: Any, **kwargs: Any) -> None:
    """Receive contextadmin's ``version_published`` (inside the publishing transaction)."""
    subscriptions = subscriptions_for_workflow(workflow.pk)
    if subscriptions:
        payload = version_payload(
            workflow_name=workflow.name, number=version.number, digest=version.digest
        )
        deliveries_write(
            subscriptions=subscriptions,
            lane=f"workflow:{workflow.pk}",
            items=[("version_published", payload)],
        )


def subscriptions_cache_connect() -> None:
    """Drop this process's cached active set whenever it saves or deletes a subscription."""
    for signal in (post_save, post_delete):
        signal.connect(
            subscriptions_cache_clear, sender=Subscription, dispatch_uid=f"webhooks.{signal}"
        )
