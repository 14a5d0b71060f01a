"""One warning per server outage per process, not one per run.

A runtime process may report hundreds of runs to one server. When that server goes away, each
run's sender thread meets the outage; logging it per run gave a fleet thousands of identical
lines (2,000 runs: 4,000 lines). ``OUTAGES`` keeps, per server, the runs waiting for it: the
first run to meet an outage logs it (naming itself, as a single run always did), the others are
counted, and the last one to get through logs the recovery with how many runs waited.
"""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger("contextadmin_sdk.client.reporter")  # the reporter's one logger


class Outages:
    """The runs of this process waiting for each server (``base_url``), and since when."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, set[str]] = {}
        self._met: dict[str, tuple[float, set[str]]] = {}  # server -> (began, runs that met it)

    def reset(self) -> None:
        """In a forked child: the parent's runs wait for nothing here, and a lock its threads
        held at the fork would stay held."""
        self._lock = threading.Lock()
        self._waiting = {}
        self._met = {}

    def met(self, *, server: str, run_id: str, error: Exception) -> None:
        """A run's request to ``server`` failed in a way worth retrying."""
        with self._lock:
            waiting = self._waiting.setdefault(server, set())
            if run_id in waiting:
                return
            first = not waiting
            waiting.add(run_id)
            # A run that got through may meet the same outage again (a refused reconnect while
            # the server comes back): it is one run that waited, not two.
            self._met.setdefault(server, (time.monotonic(), set()))[1].add(run_id)
        if first:
            logger.warning(
                "run %s: server unavailable (%s); retrying in the background, the chat goes on "
                "(other runs of this process that meet it are counted, not logged)",
                run_id,
                error,
            )

    def passed(self, *, server: str, run_id: str) -> None:
        """A run's request to ``server`` got through."""
        with self._lock:
            waiting = self._waiting.get(server)
            if not waiting or run_id not in waiting:
                return
            waiting.discard(run_id)
            if waiting:
                return
            del self._waiting[server]
            began, met = self._met.pop(server)
            runs = len(met)
        logger.warning(
            "run %s: server reachable again after %.0f s; reporting resumed (%d run%s of this "
            "process waited for it)",
            run_id,
            time.monotonic() - began,
            runs,
            "" if runs == 1 else "s",
        )

    def left(self, *, server: str, run_id: str) -> None:
        """A run stopped waiting without getting through (closed, or gave up): not counted as
        waiting any more, so the outage's end is still logged by the runs that remain."""
        with self._lock:
            waiting = self._waiting.get(server)
            if waiting is None or run_id not in waiting:
                return
            waiting.discard(run_id)
            if not waiting:
                del self._waiting[server]
                self._met.pop(server, None)


OUTAGES = Outages()
