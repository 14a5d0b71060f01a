"""What the inspector's stream reads: its first snapshot and the log's wire messages for
catch-up, byte for byte the ones the live broadcast sent (both built by ``runs.messages``), and
the run's warnings (the events list keeps only the latest events; the page loads them all)."""

from __future__ import annotations

from typing import Any

from contextadmin_sdk.engine import event_sender, replaying

from runs.messages import Message, event_message, handoffs_now, snapshot_message
from runs.models import Run, RunEvent
from runs.selectors.run import run_get, run_summary
from runs.selectors.runs_list import run_last_event_at
from runs.state import run_config, run_state_at, run_state_rebuilt, stored_state_seq

CATCH_UP_CHUNK = 500
WARNINGS_SHOWN = 1000  # the run page's "show all warnings" lists at most the latest this many


def run_snapshot(*, run_id: str, after: int | None) -> Message:
    """The inspector's first message: the state as of ``after`` (latest when None), the
    hand-off readiness then, and the run's summary."""
    run = run_get(run_id=run_id)
    state = run_state_at(run=run, seq=after, name="after").as_response(run)
    # the run's last event as stored: the page's "Last event" for every event up to the
    # summary's event_count, however late the page replays them
    run.last_event_at = run_last_event_at(run=run)  # type: ignore[attr-defined]
    return snapshot_message(state=state, summary=run_summary(run=run))


def run_event_messages(
    *, run_id: str, after: int, limit: int = CATCH_UP_CHUNK
) -> list[tuple[int, str]]:
    """Return the wire messages of the events after ``after``, in order (for catch-up).

    Each message carries the hand-off readiness after its event, so the log is replayed from
    the state at ``after``: the same messages the live broadcast sent.
    """
    events = list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])
    if not events:
        return []
    run = run_get(run_id=run_id)
    config = run_config(run)
    state = run_state_rebuilt(run=run, seq=after)
    messages = []
    with replaying():  # stored events: their flips were logged when ingested
        for event in events:
            state.apply(event.payload)
            handoffs = handoffs_now(config, state.context)
            text = event_message(
                seq=event.seq,
                event=event.payload,
                result=event.result,
                handoffs=handoffs,
                received_at=event.received_at,
            )
            messages.append((event.seq, text))
    return messages


def run_warning_count(*, run: Run) -> int:
    """How many ``warning`` events the run has had: ``execution.warnings`` of ``run.state``
    plus the warnings logged after it (the stored state may be up to ``STATE_WRITE_EVERY``
    events behind the log: counted there, not replayed, on every page load)."""
    stored = int((run.state.get("execution") or {}).get("warnings", 0))
    after = stored_state_seq(run.state)
    if after >= run.last_seq:
        return stored
    return stored + RunEvent.objects.filter(run_id=run.pk, seq__gt=after, type="warning").count()


def run_warnings(*, run: Run, limit: int = WARNINGS_SHOWN) -> dict[str, Any]:
    """The run's ``warning`` events (changes the chat made that the run refused), newest first,
    at most ``limit`` of them, and ``total``: how many the run has, the count its page's header
    shows (``execution.warnings``), so the page says "the latest N of M" in the header's terms."""
    rows = (
        RunEvent.objects.filter(run_id=run.pk, type="warning")
        .order_by("-seq")
        .values_list("seq", "payload")[:limit]
    )
    return {
        "total": run_warning_count(run=run),
        "limit": limit,
        "warnings": [
            {"seq": seq, "agent": event_sender(payload), "event": payload} for seq, payload in rows
        ],
    }
