"""The wire messages: what the sockets and the API send about a run, in one place.

Beneath the services and the selectors (both import it; it imports neither): ingest builds an
event's message as it applies the event, and the inspector's catch-up builds the same message,
byte for byte, from the log. Only the engine decides what a message says (hand-off readiness,
an event's sender); this module only shapes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson
from contextadmin_sdk.engine import event_sender, handoffs_readiness
from contextadmin_sdk.engine.format import ContextVariablesFile

from contextadmin.errors import ApiError

Message = dict[str, Any]


def json_text(data: Any) -> str:
    """Serialize once for the wire (orjson: fast, and it refuses NaN)."""
    return orjson.dumps(data).decode()


def handoffs_now(config: ContextVariablesFile, context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each hand-off rule with whether it holds in this context (the engine decides)."""
    return handoffs_readiness(config, context) if config.handoffs else []


def event_message(
    *,
    seq: int,
    event: Mapping[str, Any],
    result: Mapping[str, Any],
    handoffs: list[dict[str, Any]],
    received_at: datetime | None = None,
) -> str:
    """The inspector's wire message for one stored event (live and catch-up alike; a stored
    one has ``received_at``, which a resume mark carries: a replayed mark keeps its time)."""
    message = {
        "type": "event",
        "seq": seq,
        "event": event,
        "agent": event_sender(event),
        "flips": result.get("flips", []),
        "changes": result.get("changes", {}),
        "handoffs": handoffs,
    }
    if "outputs" in result:  # a mapped tool's response: what each output mapping wrote
        message["outputs"] = result["outputs"]
    if "resumed" in result:  # the engine's resume mark (execution.resumes) of this event
        when = {"received_at": received_at.isoformat()} if received_at is not None else {}
        message["resumed"] = {**result["resumed"], **when}
    return json_text(message)


def snapshot_message(*, state: Mapping[str, Any], summary: Mapping[str, Any]) -> Message:
    """The inspector's first message: the state API's answer, with the run's summary."""
    return {"type": "snapshot", **state, "run": summary}


def run_message(*, summary: Mapping[str, Any]) -> str:
    """The runs list's message for a run that started or changed."""
    return json_text({"type": "run", "run": summary})


def ack_message(ack: Mapping[str, Any]) -> Message:
    """The ingest socket's answer for one stored (or already stored) event."""
    return {"type": "ack", "seq": ack["seq"], "flips": ack["flips"]}


def batch_ack_message(*, last_seq: int, flips: Any, acks: Any) -> Message:
    """The ingest socket's answer for a batch frame: the events POST's answer, typed."""
    return {"type": "batch_ack", "last_seq": last_seq, "flips": flips, "acks": acks}


def error_message(exc: ApiError) -> Message:
    """A socket's message for a refused frame, batch or subscription."""
    return {"type": "error", "status": exc.status, **exc.as_dict()}


def pong_message(*, seq: int) -> str:
    """The inspector's answer to a ping: the last seq it was sent."""
    return json_text({"type": "pong", "seq": seq})
