"""What ``RunReporter.resume`` reads back after a crash: the run's spool file (the start request
and every event observed, a torn last line ignored) and, with the server's state, ``Resumed``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Resumed:
    """What ``RunReporter.resume`` found: the server's state and the spool's unsent events."""

    def __init__(
        self,
        *,
        server: dict[str, Any] | None,
        start: dict[str, Any] | None,
        unsent: list[dict[str, Any]],
    ) -> None:
        self.server = server
        self.start = start
        self.unsent = unsent


class Spool:
    def __init__(self) -> None:
        self.start: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []


def spool_read(path: Path | None) -> Spool:
    """Read a spool file; a torn last line (the process died mid-write) is ignored."""
    spool = Spool()
    if path is None or not path.exists():
        return spool
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "start" in record:
                spool.start = record["start"]
            elif "event" in record:
                event = record["event"]
                if not spool.events or event["seq"] > spool.events[-1]["seq"]:
                    spool.events.append(event)
    return spool
