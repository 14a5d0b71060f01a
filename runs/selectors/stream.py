"""What the inspector's stream reads: its first snapshot and the log's wire messages for
catch-up, byte for byte the ones the live broadcast sent (both built by ``runs.messages``)."""

from __future__ import annotations

from runs.messages import Message, event_message, handoffs_now, snapshot_message
from runs.models import RunEvent
from runs.selectors.run import run_get, run_summary
from runs.selectors.runs_list import run_last_event_at
from runs.state import run_config, run_state_at, run_state_rebuilt

CATCH_UP_CHUNK = 500


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
    for event in events:
        state.apply(event.payload)
        handoffs = handoffs_now(config, state.context)
        text = event_message(seq=event.seq, event=event.payload, result=event.result,
                             handoffs=handoffs)
        messages.append((event.seq, text))
    return messages
