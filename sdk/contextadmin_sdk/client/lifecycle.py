"""A reporter and its process: a forked child inherits no run to report, and the interpreter's
exit waits for all reporters' acknowledgements together, not for each in turn.

A child forked from a runtime (``multiprocessing``'s fork, a pre-forking server, ``os.fork``)
inherits its reporters: queues, sockets, locks held by threads that do not exist there, and
each spool's shared memory map. None of it is the child's: it would number events the parent
numbers too, and closing a spool (at the child's exit) cuts the file under the parent's map, a
``SIGBUS`` in the parent at its next page. So in the child a reporter that reports a run
refuses to, once, saying why, and never touches the spool; one that has started nothing is the
child's to use.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING

from contextadmin_sdk.client.outages import OUTAGES
from contextadmin_sdk.client.transport import ReportError

if TYPE_CHECKING:
    from contextadmin_sdk.client.reporter import RunReporter

logger = logging.getLogger("contextadmin_sdk.client.reporter")  # one logger for the reporter

EXIT_WAIT_S = 1.0  # what the interpreter's exit waits, in all, for background reporters' acks

_reporters: weakref.WeakSet[RunReporter] = weakref.WeakSet()
_exit_deadline: float | None = None


def reporter_track(reporter: RunReporter) -> None:
    """Know ``reporter``, so a forked child disowns its run."""
    _reporters.add(reporter)


def exit_flush(reporter: RunReporter) -> None:
    """At the interpreter's exit: send what is queued, within one deadline shared by every
    reporter (100 reporters of a server that is down wait ``EXIT_WAIT_S``, not 100 s); what is
    left stays in the spool, said in one line per run."""
    global _exit_deadline
    now = time.monotonic()
    if _exit_deadline is None:
        _exit_deadline = now + EXIT_WAIT_S
    if reporter._sender is not None:
        reporter._sender.close(max(0.0, _exit_deadline - now))
        return
    try:
        reporter.flush()
    except ReportError as exc:  # the server refused or stayed down: said, not a traceback
        logger.error(
            "run %s: %d events not sent at exit: %s", reporter.run_id, len(reporter._pending), exc
        )


def _disown(reporter: RunReporter, *, parent: int) -> None:
    if reporter.run_id is None:  # nothing started: the child's own reporter
        return
    why = (
        f"this process was forked from process {parent}, which reports the run: not reported "
        "here (create a RunReporter in this process to report from it)"
    )
    atexit.unregister(reporter._flush_at_exit)
    reporter._lock = threading.Lock()  # another thread may have held it at the fork
    reporter._pending.clear()  # the parent sends them
    reporter._refusal = f"run {reporter.run_id}: {why}"
    if reporter._sender is not None:
        reporter._sender.disown(why)


def _after_fork_in_child() -> None:
    OUTAGES.reset()
    parent = os.getppid()
    for reporter in list(_reporters):
        _disown(reporter, parent=parent)


os.register_at_fork(after_in_child=_after_fork_in_child)
