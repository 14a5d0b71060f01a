"""A small client an agent runtime uses to report a run (no Django: the standard library and
the engine's format, for the definitions it ran with: ``contextadmin_sdk.client.definitions``).

Two modes. **Blocking** (the default, for scripts such as ``simulate_run``): ``event()`` queues
and sends a batch from the caller's thread when it is full or due, retrying up to ``retries``
times and raising ``ReportError`` when the server refuses or stays down::

    reporter = RunReporter("http://127.0.0.1:8000", token)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="InterviewAgent", text="NEXT")
    reporter.close()            # flushes; also done at interpreter exit

**Background** (``background=True``, what ``contextadmin_sdk.integrations.autogen`` uses inside a
chat): the
caller's thread only numbers the event and appends it to a bounded queue (and, with
``spool_dir``, one JSON line to a spool file); a daemon thread sends batches. Nothing in this
mode blocks or raises into the caller: a slow, down or refusing server is logged once per
outage, not per event. ``start()`` returns at once with a run id chosen here (the server accepts
a client's ``run_id``), so the chat never waits for the server to answer.

- **Capacity**: at most ``capacity`` unsent events (default 10 000) are held in memory. Beyond
  that, with a spool, new events go to the spool file only and the sender reads them back from
  it, in order, once it has caught up; without a spool, the events beyond capacity are dropped
  and the reporter stops reporting the run (seqs must be contiguous), counting them in
  ``dropped`` and logging one error.
- **Spool** (``spool_dir``): one ``<run_id>.jsonl`` per run: the start request, then every
  event with its seq, appended and flushed to the OS before ``event()`` returns, so a runtime
  killed mid-chat loses nothing it observed. ``resume(run_id)`` reads it back and re-sends what
  the server has not stored. It is deleted once the run has ended and everything is
  acknowledged.
- **Transport**: batched HTTP POSTs (``batch_size`` events, at most ``MAX_BATCH_BYTES``) to
  ``/api/runs/<id>/events/``. Every event carries its client-side seq, so re-sending a batch
  after a timeout, a 5xx or a dropped connection is idempotent: the server acknowledges seqs it
  already has and stores each event once.
- ``close(timeout=...)`` waits up to ``timeout`` seconds for everything to be acknowledged and
  says whether it was; what is left stays in the spool for a later ``resume``.
- **A refused start** (a bad token, an unknown workflow: a 4xx): one error names the cause and
  the fix; the run's events stay in the spool, or in memory up to ``capacity``, and
  ``retry_start()`` (or ``resume`` in a later process, from the spool) sends them once the
  operator has fixed the cause. ``wait_started()`` says whether the run exists on the server.
"""

from __future__ import annotations

import atexit
import collections
import http.client
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from contextadmin_sdk.client.definitions import declared_mapping, definitions_fetch
from contextadmin_sdk.client.refusals import start_refused_message
from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from contextadmin_sdk.engine.format import ContextVariablesFile

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0
MAX_BATCH_BYTES = 512 * 1024  # half the server's default API_MAX_BODY_BYTES
DEFAULT_CAPACITY = 10_000
BACKGROUND_BATCH_SIZE = 500  # fewer, larger requests: less of the sender's work on the GIL


class ReportError(RuntimeError):
    """The server refused a request (a 4xx that retrying cannot fix), or retries ran out."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after  # seconds the server asked to wait (429, 503)


class RunReporter:
    """Start a run and stream its events in batches, with retries that are safe by seq."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        batch_size: int | None = None,
        flush_interval: float = 0.2,
        retries: int = 8,
        timeout: float = 10.0,
        backoff: float = 0.1,
        on_flips: Callable[[list[dict[str, Any]]], None] | None = None,
        background: bool = False,
        capacity: int = DEFAULT_CAPACITY,
        spool_dir: str | os.PathLike[str] | None = None,
        max_backoff: float = 5.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.batch_size = batch_size or (BACKGROUND_BATCH_SIZE if background else 100)
        self._batch_size_given = batch_size is not None
        self.flush_interval = flush_interval
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.on_flips = on_flips
        self.run_id: str | None = None
        self.state: dict[str, Any] | None = None
        self.flips: list[dict[str, Any]] = []
        self.last_acked_seq = 0
        self.capacity = capacity
        self.spool_dir = Path(spool_dir) if spool_dir is not None else None
        self.dropped = 0
        self.error: str | None = None  # why the background sender gave up, if it did
        self._background = background
        self._next_seq = 1
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self._sender: _BackgroundSender | None = None
        atexit.register(self._flush_at_exit)

    # -- public API -------------------------------------------------------------------------
    @property
    def background(self) -> bool:
        """Whether events are sent by a background thread (see the module docstring)."""
        return self._background

    def use_background(
        self, *, capacity: int | None = None, spool_dir: str | os.PathLike[str] | None = None
    ) -> None:
        """Switch to background mode before the run starts (what the AG2 integration does)."""
        if self.run_id is not None and not self._background:
            raise ReportError("use_background() must come before start()")
        self._background = True
        if not self._batch_size_given:
            self.batch_size = BACKGROUND_BATCH_SIZE
        if capacity is not None:
            self.capacity = capacity
        if spool_dir is not None:
            self.spool_dir = Path(spool_dir)

    @property
    def next_seq(self) -> int:
        """The seq the next event will get."""
        return self._next_seq

    def start(
        self,
        *,
        workflow: str,
        enterprise_id: str,
        run_id: str | None = None,
        environment: str | None = None,
        context: dict[str, Any] | None = None,
        definitions: ContextVariablesFile | Mapping[str, Any] | None = None,
        runtime: Mapping[str, str] | None = None,
    ) -> str:
        """Start a run on the server and return its id (a retried start is idempotent by id).

        ``definitions``: what the runtime runs with (a parsed config is sent as its canonical
        export with its version and digest), so the run is pinned to them; ``runtime``: what
        reports it (``contextadmin_sdk.client.definitions.runtime_info``). In background mode the
        request
        is queued and the id (``run_id`` or a new one) returned at once.
        """
        body: dict[str, Any] = {"workflow": workflow, "enterprise_id": enterprise_id}
        if run_id is None and self._background:
            run_id = uuid.uuid4().hex
        if run_id is not None:
            body["run_id"] = run_id
        if environment is not None:
            body["environment"] = environment
        if context is not None:
            body["context"] = context
        if definitions is not None:
            body["definitions"] = declared_mapping(definitions)
        if runtime is not None:
            body["runtime"] = dict(runtime)
        if self._background:
            assert run_id is not None
            self.run_id = run_id
            self._next_seq = 1
            self._sender = _BackgroundSender(self, start_body=body)
            return run_id
        answer = self._request("POST", "/api/runs/", body)
        self.run_id = answer["run_id"]
        self.state = answer["state"]
        last_seq = int(answer["state"].get("seq", 0))
        self.last_acked_seq = last_seq
        self._next_seq = last_seq + 1
        return str(answer["run_id"])

    def definitions(
        self,
        workflow: str,
        *,
        environment: str = "development",
        version: int | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> ContextVariablesFile:
        """Fetch the workflow's published definitions (``version`` N or ``"draft"``: another),
        parsed, for ``attach``: the ETag is cached (in memory, and in ``cache_dir``), so an
        unchanged version costs a 304; a server that is down falls back to the cached copy."""
        return definitions_fetch(
            base_url=self.base_url,
            token=self.token,
            workflow=workflow,
            environment=environment,
            version=version,
            cache_dir=cache_dir,
            timeout=self.timeout,
        )

    def wait_started(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` for the server to answer the run start; return whether the
        run exists there (False: refused, see ``error``, or no answer yet)."""
        if self._sender is None:
            return self.state is not None
        return self._sender.wait_started(timeout)

    def retry_start(self) -> None:
        """Send a refused run start again, with the events kept since (background mode), once
        the cause is fixed (a new token: set ``token`` first)."""
        if self._sender is not None:
            self._sender.retry_start()

    def fetch_state(self, run_id: str) -> dict[str, Any]:
        """GET the run's latest state (``{"seq", "state", "provenance", "flips"}``); blocking."""
        return self._request("GET", f"/api/runs/{run_id}/state/", None)

    def resume(self, run_id: str) -> Resumed:
        """Continue an existing run: its server state, plus what the spool holds beyond it.

        The spool's events the server has not stored are queued for delivery (background
        mode), and the next event gets the seq after the last one observed. Raises
        ``ReportError`` when neither the server nor a spool knows the run.
        """
        spool = _read_spool(self._spool_path(run_id))
        server: dict[str, Any] | None = None
        try:
            server = self.fetch_state(run_id)
        except ReportError as exc:
            if spool.start is None:
                raise ReportError(
                    f"resume {run_id}: the server has no state for it ({exc}) and there is no "
                    "spool of it to rebuild from"
                ) from None
            logger.warning(
                "resume %s: server state unavailable (%s); rebuilding from the spool", run_id, exc
            )
        server_seq = int(server["seq"]) if server is not None else 0
        unsent = [event for event in spool.events if event["seq"] > server_seq]
        self.run_id = run_id
        self.state = server
        self.last_acked_seq = server_seq
        last_seq = unsent[-1]["seq"] if unsent else server_seq
        self._next_seq = last_seq + 1
        start_body = spool.start if server is None else None
        if self._background:
            self._sender = _BackgroundSender(
                self, start_body=start_body, resumed=unsent, spool_append=True
            )
        else:
            self._pending.extend(unsent)
        return Resumed(server=server, start=spool.start, unsent=unsent)

    def event(self, type: str, **fields: Any) -> int:
        """Queue one event and return its seq; blocking mode sends a batch when full or due."""
        if self._sender is not None:
            return self._sender.enqueue({"type": type, **fields})
        with self._lock:
            seq = self._next_seq
            self._next_seq += 1
            self._pending.append({"type": type, **fields, "seq": seq})
            due = (
                len(self._pending) >= self.batch_size
                or time.monotonic() - self._last_flush >= self.flush_interval
            )
        if due:
            self.flush()
        return seq

    def flush(self, timeout: float | None = None) -> bool:
        """Send every queued event; in background mode wait up to ``timeout`` for the acks.

        Returns whether everything queued so far is acknowledged.
        """
        if self._sender is not None:
            return self._sender.wait_acked(timeout)
        with self._lock:
            if self.run_id is None:
                if self._pending:
                    raise ReportError("start() the run before reporting events")
                return True
            while self._pending:
                batch = self._pending[: self.batch_size]
                answer = self._request(
                    "POST", f"/api/runs/{self.run_id}/events/", {"events": batch}
                )
                del self._pending[: len(batch)]
                self._acknowledged(answer)
            self._last_flush = time.monotonic()
        return True

    def close(self, timeout: float | None = 10.0) -> bool:
        """Flush what is queued (background mode: for at most ``timeout`` seconds) and stop."""
        atexit.unregister(self._flush_at_exit)
        if self._sender is not None:
            return self._sender.close(timeout)
        self.flush()
        return True

    def __enter__(self) -> RunReporter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- transport --------------------------------------------------------------------------
    def _acknowledged(self, answer: dict[str, Any]) -> None:
        self.last_acked_seq = int(answer["last_seq"])
        if answer.get("flips"):
            self.flips.extend(answer["flips"])
            if self.on_flips is not None:
                self.on_flips(answer["flips"])

    def _spool_path(self, run_id: str) -> Path | None:
        return self.spool_dir / f"{run_id}.jsonl" if self.spool_dir is not None else None

    def _flush_at_exit(self) -> None:
        if self._sender is not None:
            self._sender.close(1.0)
            return
        try:
            self.flush()
        except Exception:
            logger.exception(
                "run %s: could not flush %d events at exit", self.run_id, len(self._pending)
            )

    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        retries: int | None = None,
        raw: bytes | None = None,
    ) -> dict[str, Any]:
        data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
        delay = self.backoff
        retries = self.retries if retries is None else retries
        last_error: Exception | None = None
        for attempt in range(retries + 1):
            headers = {"Authorization": f"Bearer {self.token}"}
            if data is not None:
                headers["Content-Type"] = "application/json"
            request = urllib.request.Request(  # noqa: S310  (base_url is the operator's server)
                self.base_url + path, data=data, method=method, headers=headers
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                    result: dict[str, Any] = json.loads(response.read())
                    return result
            except urllib.error.HTTPError as exc:
                payload = _error_body(exc)
                if exc.code not in RETRYABLE_STATUSES:
                    message = payload.get("error") if isinstance(payload, dict) else None
                    raise ReportError(
                        f"{method} {path}: {exc.code} {message or exc.reason}",
                        status=exc.code,
                        body=payload,
                    ) from None
                last_error = exc
                wait = _retry_after(exc)  # a 429 or 503 says how long to wait
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                last_error = exc
                wait = None
            if attempt < retries:
                pause = delay if wait is None else wait
                logger.warning(
                    "%s %s failed (%s); retry %d in %.2fs",
                    method,
                    path,
                    last_error,
                    attempt + 1,
                    pause,
                )
                time.sleep(pause)
                delay = min(delay * 2, self.max_backoff)
        raise ReportError(f"{method} {path}: gave up after {retries + 1} attempts: {last_error}")


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


class _Spool:
    def __init__(self) -> None:
        self.start: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []


def _read_spool(path: Path | None) -> _Spool:
    """Read a spool file; a torn last line (the process died mid-write) is ignored."""
    spool = _Spool()
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


class _BackgroundSender:
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
            self.spool_path.parent.mkdir(parents=True, exist_ok=True)
            # Unbuffered: each line is one write(2), in the OS before enqueue returns.
            self.spool = self.spool_path.open("ab" if spool_append else "wb", buffering=0)
            if start_body is not None and not spool_append:
                self.spool.write(_encode({"start": start_body}) + b"\n")
        self.last_enqueued = reporter._next_seq - 1
        self.ended = False  # a terminal run_status was enqueued
        for event in resumed or []:
            self.queue.append((event["seq"], _encode(event)))
            if event.get("type") == "run_status" and event.get("status") in RUN_ENDED_STATUSES:
                self.ended = True
        self.outage_logged = False
        self.started = start_body is None  # the run exists on the server (resumed: it does)
        self.start_answered = threading.Event()  # set once the server answered the start
        if self.started:
            self.start_answered.set()
        self.start_refused: str | None = None  # why the server refused the start, if it did
        self.retry_requested = False
        self.closed: bool | None = None  # close()'s answer, once closed
        self.connection: http.client.HTTPConnection | None = None
        self.path_prefix = ""
        self.thread = threading.Thread(
            target=self._run, name=f"RunReporter-{self.run_id}", daemon=True
        )
        self.thread.start()

    # -- the caller's thread ------------------------------------------------------------------
    def enqueue(self, event: dict[str, Any]) -> int:
        reporter = self.reporter
        seq = reporter._next_seq
        reporter._next_seq = seq + 1
        event["seq"] = seq
        self.last_enqueued = seq
        if event.get("type") == "run_status" and event.get("status") in RUN_ENDED_STATUSES:
            self.ended = True
            self.urgent = True
        data = _encode(event)
        queue = self.queue
        spool = self.spool
        # The common path takes no lock: deque.append is atomic, only the sender pops, and only
        # this thread starts an overflow. Blocking on the sender's lock would hand it the GIL.
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
            spool.write(b'{"event":' + data + b"}\n")
        queue.append((seq, data))
        size = len(queue)
        if size == 1 or size == reporter.batch_size or self.urgent:
            with self.condition:
                if size == 1:
                    self.first_queued_at = time.monotonic()
                self.condition.notify()
        return seq

    def _enqueue_rare(self, seq: int, data: bytes) -> None:
        """Enqueue when stopped, given up, overflowing or full (under the lock)."""
        reporter = self.reporter
        if self.stopped:  # after close(): nothing sends or spools any more
            reporter.dropped += 1
            return
        if self.given_up and self.start_refused is None:  # kept in the spool for a resume
            if self.spool is not None:
                self.spool.write(b'{"event":' + data + b"}\n")
            else:
                reporter.dropped += 1
            return
        if self.spool is not None:
            if self.overflow_offset is None and len(self.queue) >= reporter.capacity:
                self.overflow_offset = self.spool.tell()
            self.spool.write(b'{"event":' + data + b"}\n")
            if self.overflow_offset is not None:
                self.condition.notify()
                return  # the sender reads it back from the spool
            self.queue.append((seq, data))
            self.condition.notify()
            return
        if len(self.queue) >= reporter.capacity:
            reporter.dropped += 1
            if self.start_refused is not None:  # already said: kept up to capacity
                return
            self.given_up = True
            reporter.error = (
                f"more than {reporter.capacity} unsent events and no spool: reporting of "
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
            while self.reporter.last_acked_seq < target and not self.given_up:
                if self.stopped:
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                self.condition.wait(remaining if remaining is not None else 0.5)
            return self.reporter.last_acked_seq >= target and not self.given_up

    def close(self, timeout: float | None) -> bool:
        if self.closed is not None:
            return self.closed
        delivered = self.wait_acked(timeout)
        with self.condition:
            self.stopped = True
            self.condition.notify_all()
        self.thread.join(0.1)  # a daemon: a request still in flight to a slow server is left
        if self.spool is not None:
            with self.condition:
                self.spool.close()
            if delivered and self.ended and self.spool_path is not None:
                self.spool_path.unlink(missing_ok=True)
        if not delivered:
            unsent = self.last_enqueued - self.reporter.last_acked_seq
            where = f"kept in {self.spool_path}" if self.spool_path else "lost"
            if self.start_refused is not None:  # its one error named the cause and the fix
                logger.warning(
                    "run %s: %d events not sent, its start was refused (%s)",
                    self.run_id,
                    unsent,
                    where,
                )
            else:
                logger.error(
                    "run %s: %d events not acknowledged at close (%s)", self.run_id, unsent, where
                )
        self.closed = delivered
        return delivered

    # -- the sender thread -----------------------------------------------------------------------
    def _run(self) -> None:
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
                    self._post("/api/runs/", _encode(self.start_body))
                    self.start_body = None
                    self.started = True
                    self.start_answered.set()
                else:
                    seqs, body = self._next_batch()
                    if seqs:
                        answer = self._post(f"/api/runs/{self.run_id}/events/", body)
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
                if not self.outage_logged:
                    self.outage_logged = True
                    logger.warning(
                        "run %s: server unavailable (%s); retrying in the background, "
                        "the chat goes on",
                        self.run_id,
                        exc,
                    )
                self._back_off(delay if retry_after is None else retry_after)
                delay = min(delay * 2, reporter.max_backoff)
                continue
            except Exception as exc:  # never let the sender die silently
                self._give_up(f"unexpected {type(exc).__name__}: {exc}")
                return
            if self.outage_logged:
                self.outage_logged = False
                logger.warning("run %s: server reachable again; reporting resumed", self.run_id)
            delay = reporter.backoff

    def _post(self, path: str, data: bytes) -> dict[str, Any]:
        """POST on one kept-alive connection (urllib would open one per request, and its
        Python overhead is taken from the chat's share of the GIL)."""
        reporter = self.reporter
        if self.connection is None:
            parts = urllib.parse.urlsplit(reporter.base_url)
            factory = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            self.connection = factory(parts.netloc, timeout=reporter.timeout)
            self.path_prefix = parts.path.rstrip("/")
        headers = {
            "Authorization": f"Bearer {reporter.token}",
            "Content-Type": "application/json",
        }
        try:
            self.connection.request("POST", self.path_prefix + path, body=data, headers=headers)
            response = self.connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.connection.close()
            self.connection = None
            raise ReportError(f"POST {path}: {exc}") from None
        if response.status < 300:
            result: dict[str, Any] = json.loads(payload)
            return result
        try:
            body = json.loads(payload or b"null")
        except ValueError:
            body = None
        message = body.get("error") if isinstance(body, dict) else None
        error = ReportError(
            f"POST {path}: {response.status} {message or response.reason}",
            status=response.status,
            body=body,
            retry_after=_parse_retry_after(response.getheader("Retry-After")),
        )
        if response.getheader("Connection", "").lower() == "close":
            self.connection.close()
            self.connection = None
        raise error

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
            seqs: list[int] = []
            parts: list[bytes] = []
            size = 0
            for seq, data in self.queue:
                size += len(data) + 1
                if parts and (len(parts) >= reporter.batch_size or size > MAX_BATCH_BYTES):
                    break
                seqs.append(seq)
                parts.append(data)
        return seqs, b'{"events":[' + b",".join(parts) + b"]}"

    def _refill_from_spool(self) -> None:
        """Load overflowed events back from the spool (under the lock), in seq order."""
        assert self.spool_path is not None and self.overflow_offset is not None
        limit = max(1, self.reporter.capacity // 2)
        with self.spool_path.open("rb") as spool:
            spool.seek(self.overflow_offset)
            while len(self.queue) < limit:
                line = spool.readline()
                if not line:
                    self.overflow_offset = None  # caught up: the caller's thread queues again
                    return
                event = json.loads(line)["event"]
                self.queue.append((event["seq"], _encode(event)))
                self.overflow_offset = spool.tell()

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

    def retry_start(self) -> None:
        with self.condition:
            if self.start_refused is None:
                return
            self.retry_requested = True
            self.condition.notify_all()
            if not self.stopped:
                return
            # Closed already (the chat has ended): a new thread sends what was kept.
            self.stopped = False
            self.closed = None
            if self.spool_path is not None:
                self.spool = self.spool_path.open("ab", buffering=0)
            self.thread = threading.Thread(
                target=self._run, name=f"RunReporter-{self.run_id}", daemon=True
            )
        atexit.register(self.reporter._flush_at_exit)
        self.thread.start()

    def _start_refuse(self, exc: ReportError) -> None:
        """Keep the events (spool, or memory up to capacity) and say once why and what to do."""
        message = start_refused_message(
            run_id=self.run_id,
            cause=str(exc),
            status=exc.status,
            workflow=(self.start_body or {}).get("workflow"),
            spool_path=self.spool_path,
            capacity=self.reporter.capacity,
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


def _encode(record: Any) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    """Return the server's Retry-After in seconds (capped at a minute), if it sent one."""
    return _parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)


def _parse_retry_after(value: str | None) -> float | None:
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


def _error_body(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read() or b"null")
    except (ValueError, OSError):
        return None
