"""What ``RunReporter.resume`` reads back after a crash: the run's spool file (the start request
and every event observed, a torn last line ignored) and, with the server's state, ``Resumed``;
and what the reporter says of a spool it could not deliver, or delivered (``deliver``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from contextadmin_sdk.engine import RUN_ENDED_STATUSES

logger = logging.getLogger("contextadmin_sdk.client.reporter")  # one logger for the reporter


class Resumed:
    """What ``RunReporter.resume`` found: the server's state and the spool's unsent events."""

    def __init__(
        self,
        *,
        server: dict[str, Any] | None,
        start: dict[str, Any] | None,
        unsent: list[dict[str, Any]],
        spool_path: Path | None = None,
    ) -> None:
        self.server = server
        self.start = start
        self.unsent = unsent
        self.spool_path = spool_path  # where the run's spool is (None: the reporter has none)

    @property
    def status(self) -> str:
        """The run's status once the unsent events are in: the last ``run_status`` observed."""
        for event in reversed(self.unsent):
            if event.get("type") == "run_status":
                return str(event.get("status"))
        execution = (self.server or {}).get("state", {}).get("execution", {})
        return str(execution.get("status", "running"))


class Spool:
    def __init__(self) -> None:
        self.start: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []


def spool_read(path: Path | None) -> Spool:
    """Read a spool file; a torn last line (the process died mid-write), or any line that is
    not a spool's, is ignored."""
    spool = Spool()
    if path is None or not path.exists():
        return spool
    with path.open("rb") as lines:  # bytes: a line that is not UTF-8 is skipped, not fatal
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):  # not a spool's line: skipped as a torn one is
                continue
            if "start" in record:
                spool.start = record["start"]
            elif isinstance(record.get("event"), dict):
                event = record["event"]
                if not isinstance(event.get("seq"), int):
                    continue
                if not spool.events or event["seq"] > spool.events[-1]["seq"]:
                    spool.events.append(event)
    return spool


def spool_kept(path: Path, *, ended: bool = False) -> str:
    """Where a run's unsent events wait, and the documented ways to deliver them (an ended run
    cannot be resumed: only ``deliver``)."""
    deliver = f"kept in {path}: deliver them with python -m contextadmin_sdk.client deliver {path}"
    return deliver if ended else f"{deliver}, or resume the run (the same spool_dir and run_id)"


def close_report(
    *,
    run_id: str | None,
    unsent: int,
    started: bool,
    start_refused: bool,
    spool_path: Path | None,
    ended: bool,
) -> None:
    """Say, at a close that left events unacknowledged, how many and where they wait."""
    where = spool_kept(spool_path, ended=ended) if spool_path else "lost"
    if start_refused:  # its one error named the cause and the fix
        logger.warning("run %s: %d events not sent, its start was refused (%s)", run_id, unsent,
                       where)
        return
    what = f"{unsent} events" if unsent or started else "its start"
    logger.error("run %s: %s not acknowledged at close (%s)", run_id, what, where)


def delivery_message(*, resumed: Resumed, delivered: bool) -> str:
    """What delivering a run's spool did: how many events, and where the run stands."""
    count = len(resumed.unsent)
    if not delivered:
        where = spool_kept(resumed.spool_path) if resumed.spool_path is not None else "lost"
        return f"{count} spooled events not delivered ({where})"
    sent = (
        f"{count} spooled event{'' if count == 1 else 's'} delivered"
        if count
        else "nothing to deliver, the server has every event"
    )
    status = resumed.status
    if status in RUN_ENDED_STATUSES:
        return f"{sent}; the run is {status} on the server"
    return f"{sent}; the run is {status} on the server: resume it to go on"


def delivery_said(*, run_id: str, resumed: Resumed, delivered: bool) -> bool:
    """Log what ``RunReporter.deliver`` did (``delivery_message``); return ``delivered``."""
    message = delivery_message(resumed=resumed, delivered=delivered)
    logger.log(logging.INFO if delivered else logging.ERROR, "run %s: %s", run_id, message)
    return delivered
