"""What a run's ``nodes`` namespace keeps of each agent and tool, within the state's budget
(the limits are in ``format``): an agent's text up to ``NODE_TEXT_MAX_CHARS``, a tool's
response up to ``NODE_DATA_MAX_BYTES`` of JSON; a longer one is kept as a preview
(``{"text"|"preview", "truncated": true, "chars"|"bytes", "seq"}``), and the full output is the
event at ``seq`` in the log. Previews are a pure function of the event, so replay still rebuilds
exactly the live state."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from .events import event_sender
from .format import NODE_DATA_MAX_BYTES, NODE_TEXT_MAX_CHARS

__all__ = ["node_name", "node_output"]


def node_output(event: Mapping[str, Any], seq: int) -> Any:
    """What ``nodes`` keeps of an agent_text or tool_response event: the output, or within
    the state budget a preview of it (the full output is the event ``seq`` in the log)."""
    if event["type"] == "agent_text":
        text: str = event["text"]
        if len(text) <= NODE_TEXT_MAX_CHARS:
            return {"text": text}
        return {"text": text[:NODE_TEXT_MAX_CHARS], "truncated": True, "chars": len(text),
                "seq": seq}
    data = event.get("data")
    output = copy.deepcopy(data) if data is not None else {"status": event.get("status")}
    encoded = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    size = len(encoded.encode())
    if size <= NODE_DATA_MAX_BYTES:
        return output
    return {"preview": encoded[:NODE_DATA_MAX_BYTES], "truncated": True, "bytes": size,
            "seq": seq}


def node_name(event: Mapping[str, Any]) -> str | None:
    """The agent or tool an event adds to the state's nodes or visited agents, if any."""
    type_ = event["type"]
    if type_ == "agent_text":
        return event_sender(event)
    if type_ == "tool_response":
        tool: str = event["tool"]
        return tool
    if type_ == "handoff":
        target: str = event["target"]
        return target
    return None
