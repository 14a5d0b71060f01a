"""A refused run start in background mode (a bad token, an unknown workflow: a 4xx): the
events are kept (spool, or memory up to capacity), the cause and the fix said once, and the
start sent again on ``retry_start()``, by a new sender thread if the reporter was closed."""

from __future__ import annotations

import atexit
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextadmin_sdk.client.refusals import start_refused_message
from contextadmin_sdk.client.spool_file import SpoolFile
from contextadmin_sdk.client.transport import ReportError

if TYPE_CHECKING:
    from contextadmin_sdk.client.reporter import RunReporter

logger = logging.getLogger("contextadmin_sdk.client.reporter")  # one logger for the reporter


class StartRetry:
    """``BackgroundSender``'s part that handles a refused start (its attributes are its)."""

    reporter: RunReporter
    run_id: str | None
    condition: threading.Condition
    thread: threading.Thread
    start_body: dict[str, Any] | None
    start_refused: str | None
    start_answered: threading.Event
    retry_requested: bool
    given_up: bool
    stopped: bool
    closed: bool | None
    refusal: str | None
    spool: Any
    spool_path: Path | None

    def _run(self) -> None:
        raise NotImplementedError

    def retry_start(self) -> None:
        """Send the refused start again (``RunReporter.retry_start``)."""
        with self.condition:
            if self.start_refused is None:
                return
            self.retry_requested = True
            self.condition.notify_all()
            if not self.stopped:
                return
            # Closed already (the chat has ended): a new thread sends what was kept.
            self.stopped = False
            self.refusal = None
            self.closed = None
            if self.spool_path is not None:
                self.spool = SpoolFile(self.spool_path, append=True)
            self.thread = threading.Thread(
                target=self._run, name=f"RunReporter-{self.run_id}", daemon=True
            )
        atexit.register(self.reporter._flush_at_exit)
        self.thread.start()

    def _start_refuse(self, exc: ReportError) -> None:
        """Keep the events (spool, or memory up to capacity) and say once why and what to do."""
        message = start_refused_message(
            run_id=self.run_id,
            refusal=exc,
            workflow=(self.start_body or {}).get("workflow"),
            spool_path=self.spool_path,
            capacity=self.reporter.capacity,
            base_url=self.reporter.base_url,
        )
        with self.condition:
            self.start_refused = str(exc)
            self.given_up = True
            self.reporter.error = message
            self.condition.notify_all()
        self.start_answered.set()
        logger.error("%s", message)

    def _wait_for_retry(self) -> bool:
        """Wait for ``retry_start()`` (True) or ``close()`` (False)."""
        with self.condition:
            while not self.stopped and not self.retry_requested:
                self.condition.wait()
            if self.stopped:
                return False
            self.retry_requested = False
            self.given_up = False
            self.start_refused = None
            self.start_answered.clear()
            self.reporter.error = None
            return True
