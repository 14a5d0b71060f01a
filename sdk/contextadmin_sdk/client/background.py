"""The reporter's background mode: a bounded queue, a JSON-lines spool a crashed runtime resumes
from, and the daemon thread that sends batches (``RunReporter(background=True)``; the module
docstring of ``reporter`` says what it guarantees)."""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from contextadmin_sdk.client.outages import OUTAGES
from contextadmin_sdk.client.resume import close_report
from contextadmin_sdk.client.socket_transport import (
    SocketConnection,
    SocketUnavailable,
    socket_connection,
)
from contextadmin_sdk.client.spool_file import events_after, spool_open
from contextadmin_sdk.client.start_retry import StartRetry
from contextadmin_sdk.client.transport import (
    RETRYABLE_STATUSES,
    HttpConnection,
    ReportError,
    batch_body,
    batch_count,
    encode_record,
    event_encode,
)
from contextadmin_sdk.engine import RUN_ENDED_STATUSES

if TYPE_CHECKING:
    from contextadmin_sdk.client.reporter import RunReporter

logger = logging.getLogger("contextadmin_sdk.client.reporter")  # one logger for the reporter


class BackgroundSender(StartRetry):
    """The daemon thread of background mode; the caller's thread only calls ``enqueue``.

    Each event is encoded once, on the caller's thread (the spool line and the request body
    reuse the bytes). The sender waits up to ``flush_interval`` for a batch to fill, so a chat
    costs a request per batch rather than per event, and after a failure it backs off without
    being woken by new events (only ``flush``/``close`` cut the wait short).
    """

    def __init__(
        self,
        reporter: RunReporter,
        *,
        start_body: dict[str, Any] | None,
        resumed: list[dict[str, Any]] | None = None,
        spool_append: bool = False,
    ) -> None:
        self.reporter = reporter
        self.run_id = reporter.run_id
        self.start_body = start_body
        self.queue: collections.deque[tuple[int, bytes]] = collections.deque()  # (seq, JSON)
        self.condition = threading.Condition()
        self.first_queued_at = 0.0
        self.urgent = False  # flush()/close() waits: send now, no lingering
        self.stopped = False
        self.given_up = False
        self.overflow_offset: int | None = None  # spool byte offset of the first overflowed event
        self.spool_path = reporter._spool_path(self.run_id) if self.run_id else None
        self.spool: Any = None
        if self.spool_path is not None:
            # Each line is in the OS's page cache before enqueue returns (spool_file.py).
            first = None if spool_append or not start_body else encode_record({"start": start_body})
            self.spool = spool_open(self.spool_path, append=spool_append, first_line=first,
                                    run_id=self.run_id)
            if self.spool is None:  # could not be opened: said once, kept in memory instead
                self.spool_path = None
        self.caller_lock = threading.Lock()  # enqueue's: callers' threads, never the sender
        self.refusal: str | None = None  # why enqueue takes no more events (closed, forked)
        self.said: set[str] = set()  # the refusals logged already, each once
        self.last_enqueued = reporter._next_seq - 1
        self.ended = False  # a terminal run_status was enqueued
        for event in resumed or []:
            self.queue.append((event["seq"], encode_record(event)))
            if event.get("type") == "run_status" and event.get("status") in RUN_ENDED_STATUSES:
                self.ended = True
        self.waiting = False  # the server was unavailable to this run's last request
        self.started = start_body is None  # the run exists on the server (resumed: it does)
        self.start_answered = threading.Event()  # set once the server answered the start
        if self.started:
            self.start_answered.set()
        self.start_refused: str | None = None  # why the server refused the start, if it did
        self.retry_requested = False
        self.closed: bool | None = None  # close()'s answer, once closed
        self.http = HttpConnection(base_url=reporter.base_url, timeout=reporter.timeout)
        self.socket: SocketConnection | None = None  # opened by the sender thread (an import)
        self.socket_wanted = reporter.transport != "http"
        self.thread = threading.Thread(
            target=self._run, name=f"RunReporter-{self.run_id}", daemon=True
        )
        self.thread.start()

    # -- the caller's thread ------------------------------------------------------------------
    def enqueue(self, event: dict[str, Any]) -> int:
        # One caller at a time: two threads numbering, spooling and queueing at once would share
        # a seq or queue them out of order, both refused by the server. Uncontended, the lock
        # costs a fraction of a microsecond; the sender never takes it.
        with self.caller_lock:
            if self.refusal is not None:
                return self._refuse(ReportError(self.refusal), counted="dropped")
            reporter = self.reporter
            seq = reporter._next_seq
            event["seq"] = seq
            try:  # what the server would refuse takes no seq, so the rest goes on
                data = event_encode(event)
            except ReportError as exc:
                del event["seq"]
                return self._refuse(exc, counted="oversized" if exc.status == 413 else "invalid")
            reporter._next_seq = seq + 1
            self.last_enqueued = seq
            if event["type"] == "run_status" and event.get("status") in RUN_ENDED_STATUSES:
                self.ended = True
                self.urgent = True
            queue = self.queue
            spool = self.spool
            # The common path takes no condition: deque.append is atomic and only the sender
            # pops. Blocking on the sender's lock would hand it the GIL.
            if (
                self.stopped
                or self.given_up
                or self.overflow_offset is not None
                or (len(queue) >= reporter.capacity)
            ):
                with self.condition:
                    self._enqueue_rare(seq, data)
                return seq
            if spool is not None:
                spool.add_event(data, run_id=self.run_id)  # not written: kept in memory anyway
            queue.append((seq, data))
            size = len(queue)
            if size == 1 or size == reporter.batch_size or self.urgent:
                with self.condition:
                    if size == 1:
                        self.first_queued_at = time.monotonic()
                    self.condition.notify()
            return seq

    def _refuse(self, refusal: ReportError, *, counted: str) -> int:
        """An event not reported: counted in ``reporter.<counted>`` and said once per cause
        (an oversized event: each, with its size)."""
        setattr(self.reporter, counted, getattr(self.reporter, counted) + 1)
        message = str(refusal)
        if counted == "oversized":
            logger.error("run %s: %s", self.run_id, message)
        elif message not in self.said:
            self.said.add(message)
            logger.error("run %s: %s (more: counted in reporter.%s)", self.run_id, message, counted)
        return 0

    def disown(self, why: str) -> None:
        """In a forked child: send and spool nothing of the parent's run (``lifecycle``)."""
        self.condition = threading.Condition()  # locks other threads held at the fork
        self.caller_lock = threading.Lock()
        self.stopped = True
        self.refusal = why
        self.closed = False
        self.spool = None  # never closed here: closing cuts the file the parent has mapped

    def _enqueue_rare(self, seq: int, data: bytes) -> None:
        """Enqueue when stopped, given up, overflowing or full (under the lock)."""
        reporter = self.reporter
        if self.stopped:  # closing: nothing sends or spools any more
            reporter.dropped += 1
            return
        spool = self.spool
        if self.given_up and self.start_refused is None:  # kept in the spool for a resume
            if spool is None or not spool.add_event(data, run_id=self.run_id):
                reporter.dropped += 1
            return
        if spool is not None and spool.broken is None:
            if self.overflow_offset is None and len(self.queue) >= reporter.capacity:
                self.overflow_offset = spool.tell()
            if spool.add_event(data, run_id=self.run_id):
                if self.overflow_offset is None:
                    self.queue.append((seq, data))
                self.condition.notify()  # overflowing: the sender reads it back from the spool
                return
        if len(self.queue) >= reporter.capacity or self.overflow_offset is not None:
            reporter.dropped += 1
            if self.start_refused is not None:  # already said: kept up to capacity
                return
            self.given_up = True
            kept = "no spool" if spool is None else f"a spool that fails ({spool.broken})"
            reporter.error = (
                f"more than {reporter.capacity} unsent events and {kept}: reporting of "
                f"run {self.run_id} stopped at seq {seq}"
            )
            logger.error("run %s: %s", self.run_id, reporter.error)
            return
        self.queue.append((seq, data))
        self.condition.notify()

    def wait_acked(self, timeout: float | None) -> bool:
        target = self.last_enqueued
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.condition:
            self.urgent = True
            self.condition.notify_all()
            # the start too: a run closed before its first event must still exist
            while (self.reporter.last_acked_seq < target or not self.started) and not self.given_up:
                if self.stopped:
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                self.condition.wait(remaining if remaining is not None else 0.5)
            return self.reporter.last_acked_seq >= target and self.started and not self.given_up

    def close(self, timeout: float | None) -> bool:
        if self.closed is not None:
            return self.closed
        delivered = self.wait_acked(timeout)
        with self.condition:
            self.stopped = True
            self.refusal = "event() after close(): not reported"
            self.condition.notify_all()
        self.thread.join(0.1)  # a daemon: a request still in flight to a slow server is left
        if self.spool is not None:
            with self.condition:
                self.spool.close()
            if delivered and self.ended and self.spool_path is not None:
                self.spool_path.unlink(missing_ok=True)
        if not delivered:
            close_report(
                run_id=self.run_id,
                unsent=self.last_enqueued - self.reporter.last_acked_seq,
                started=self.started,
                start_refused=self.start_refused is not None,
                spool_path=self.spool_path,
                ended=self.ended,
            )
        self.closed = delivered
        return delivered

    @property
    def transport_in_use(self) -> str:
        return "websocket" if self.socket is not None else "http"

    # -- the sender thread -----------------------------------------------------------------------
    def _run(self) -> None:
        if self.socket_wanted:  # once: after a fallback to HTTP, a restarted thread stays there
            self.socket_wanted = False
            self.socket = socket_connection(
                transport=self.reporter.transport,
                base_url=self.reporter.base_url,
                run_id=self.run_id,
                timeout=self.reporter.timeout,
            )
        try:
            self._send_loop()
        finally:  # the connections are the sender thread's: closed by it, once it stops
            OUTAGES.left(server=self.reporter.base_url, run_id=str(self.run_id))
            self.http.close()
            if self.socket is not None:
                self.socket.close()

    def _send_loop(self) -> None:
        reporter = self.reporter
        delay = reporter.backoff
        if self.start_refused is not None and not self._wait_for_retry():
            return
        while True:
            if not self._wait_for_batch():
                return
            retry_after: float | None = None
            try:
                if self.start_body is not None:
                    self.http.post(
                        "/api/runs/", encode_record(self.start_body), token=reporter.token
                    )
                    with self.condition:
                        self.start_body = None
                        self.started = True
                        self.condition.notify_all()  # a close waiting for the start
                    self.start_answered.set()
                    self._socket_open()
                else:
                    seqs, body = self._next_batch()
                    if seqs:
                        answer = self._events_send(body)
                        self._sent(len(seqs), answer)
            except ReportError as exc:
                if exc.status is not None and exc.status not in RETRYABLE_STATUSES:
                    if self.started:
                        self._give_up(str(exc))
                        return
                    self._start_refuse(exc)
                    if not self._wait_for_retry():
                        return
                    continue
                retry_after = exc.retry_after
                self.waiting = True  # for the server: logged once per process (outages.py)
                OUTAGES.met(server=reporter.base_url, run_id=str(self.run_id), error=exc)
                self._back_off(delay if retry_after is None else retry_after)
                delay = min(delay * 2, reporter.max_backoff)
                continue
            except Exception as exc:  # never let the sender die silently
                self._give_up(f"unexpected {type(exc).__name__}: {exc}")
                return
            if self.waiting:
                self.waiting = False
                OUTAGES.passed(server=reporter.base_url, run_id=str(self.run_id))
            delay = reporter.backoff

    def _events_send(self, data: bytes) -> dict[str, Any]:
        """Send a batch over the ingest socket, or over HTTP when there is none (any more)."""
        token = self.reporter.token
        if self.socket is not None:
            try:
                return self.socket.batch_send(data, token=token)
            except SocketUnavailable as exc:
                self._socket_fallback(exc)
        return self.http.post(f"/api/runs/{self.run_id}/events/", data, token=token)

    def _socket_open(self) -> None:
        """Open the ingest socket as soon as the run exists, so the first event does not wait
        for a handshake (a failure here is retried by the first batch)."""
        try:
            if self.socket is not None:
                self.socket.open(token=self.reporter.token)
        except SocketUnavailable as exc:
            self._socket_fallback(exc)
        except ReportError:
            pass

    def _socket_fallback(self, exc: SocketUnavailable) -> None:
        self.socket = None
        why = f"the ingest websocket is unavailable ({exc}); reporting over HTTP"
        logger.warning("run %s: %s", self.run_id, why)

    def _wait_for_batch(self) -> bool:
        """Wait until there is a batch worth sending (full, due, or asked for); False: stop."""
        reporter = self.reporter
        with self.condition:
            while not self.stopped:
                if self.start_body is not None or self.overflow_offset is not None:
                    return True
                if self.queue:
                    if self.urgent or len(self.queue) >= reporter.batch_size:
                        return True
                    due = self.first_queued_at + reporter.flush_interval - time.monotonic()
                    if due <= 0:
                        return True
                    self.condition.wait(due)
                else:
                    self.urgent = False
                    self.condition.wait()
            return False

    def _back_off(self, delay: float) -> None:
        """Sleep ``delay`` after a failure; new events do not cut it short, stopping does."""
        until = time.monotonic() + delay
        with self.condition:
            while not self.stopped:
                remaining = until - time.monotonic()
                if remaining <= 0:
                    return
                self.condition.wait(remaining)

    def _next_batch(self) -> tuple[list[int], bytes]:
        reporter = self.reporter
        with self.condition:
            if not self.queue and self.overflow_offset is not None:
                self._refill_from_spool()
            # By index, not by iterating: the caller's thread appends without the lock, and an
            # iterator over a deque that grows raises. Only this thread removes from the left,
            # so the entries read here stay where they are.
            queue = self.queue
            count = batch_count(
                (queue[index][1] for index in range(min(len(queue), reporter.batch_size))),
                batch_size=reporter.batch_size,
            )
            entries = [queue[index] for index in range(count)]
        return [seq for seq, _ in entries], batch_body([data for _, data in entries])

    def _refill_from_spool(self) -> None:
        """Load overflowed events back from the spool (under the lock), in seq order."""
        assert self.spool_path is not None and self.overflow_offset is not None
        spool = self.spool
        events, self.overflow_offset = events_after(
            self.spool_path,
            self.overflow_offset,
            end=spool.tell() if spool is not None and not spool.closed else None,
            most=max(1, self.reporter.capacity // 2) - len(self.queue),
        )
        self.queue.extend((event["seq"], encode_record(event)) for event in events)

    def _sent(self, count: int, answer: dict[str, Any]) -> None:
        with self.condition:
            for _ in range(count):
                self.queue.popleft()
            if self.queue:
                self.first_queued_at = time.monotonic()
            self.reporter._acknowledged(answer)
            self.condition.notify_all()

    def wait_started(self, timeout: float | None) -> bool:
        self.start_answered.wait(timeout)
        return self.started

    def _give_up(self, why: str) -> None:
        with self.condition:
            self.given_up = True
            self.reporter.error = why
            self.queue.clear()
            self.condition.notify_all()
        logger.error(
            "run %s: reporting stopped: %s (the chat goes on; spool: %s)",
            self.run_id,
            why,
            self.spool_path,
        )
