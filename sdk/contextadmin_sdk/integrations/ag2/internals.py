"""The few things the AG2 1.x adapter reads that AG2 does not document as API, in one place.

Everything else goes through AG2's public names (``ag2.Middleware``, ``ag2.network.Hub``'s
``register_listener`` / ``adapter_state`` / ``name_to_id_map`` / ``post_envelope``,
``TransitionGraph`` with ``register_condition``, ``CHANNEL_DEP``, the ``EV_*`` constants).
What is here:

- the ``event_data`` shapes of two envelope types: ``EV_TEXT`` carries ``{"text": ...}`` and
  ``EV_CONTEXT_SET`` carries ``{"set": {...}, "delete": [...]}`` (both written by AG2's own
  helpers, ``default_build_text_envelope`` and ``workflow_helpers.set_context``);
- the order in which ``WorkflowAdapter`` tries a graph's transitions (lowest ``priority`` first,
  then list order, first match wins), which the adapter replays to tell which rule routed, and
  when it skips them: a packet's ``routing`` of kind ``finish``, or ``handoff`` with a
  ``target`` (a ``ToolCalled`` tool's ``handoff`` has none: the transitions still choose).

``tests/sdk/integrations/test_ag2_internals.py`` fails when any of them moves. Supported:
``SUPPORTED_AG2``; importing the adapter logs a warning on another minor.
"""

from __future__ import annotations

import logging
from typing import Any

import ag2

__all__ = [
    "SUPPORTED_AG2",
    "context_set_of",
    "routed_by_packet",
    "text_of_envelope",
    "transition_order",
]

SUPPORTED_AG2 = ">=1.2,<1.3"

logger = logging.getLogger(__name__)

if not ag2.__version__.startswith("1.2."):  # pragma: no cover - depends on the install
    logger.warning(
        "contextadmin_sdk.integrations.ag2 is tested with ag2 %s; this is %s", SUPPORTED_AG2,
        ag2.__version__
    )


def text_of_envelope(envelope: Any) -> str | None:
    """The text of an ``EV_TEXT`` envelope (a human's message), or None."""
    text = (envelope.event_data or {}).get("text")
    return text if isinstance(text, str) else None


def context_set_of(envelope: Any) -> tuple[dict[str, Any], list[str]]:
    """What an ``EV_CONTEXT_SET`` envelope sets and deletes."""
    data = envelope.event_data or {}
    sets = data.get("set") or {}
    deletes = data.get("delete") or []
    return (dict(sets) if isinstance(sets, dict) else {}), [str(name) for name in deletes]


def transition_order(transitions: list[Any]) -> list[Any]:
    """The transitions in the order ``WorkflowAdapter`` tries them."""
    return sorted(transitions, key=lambda transition: transition.priority)


def routed_by_packet(packet: Any) -> bool:
    """Whether a packet carried its own routing (a tool returned ``Handoff`` or ``Finish``):
    the graph's transitions did not choose its next speaker then (``event_data["routing"]``
    has ``kind`` ``"finish"``, or ``"handoff"`` with a ``target``). A ``ToolCalled`` tool's
    packet is ``"handoff"`` without a target: the graph's transitions still choose, in order,
    and one of the workflow's rules may come first."""
    routing = (packet.event_data or {}).get("routing") or {}
    if not isinstance(routing, dict):
        return False
    return routing.get("kind") == "finish" or (
        routing.get("kind") == "handoff" and bool(routing.get("target"))
    )
