"""A small client an agent runtime uses to report a run (no Django: the standard library and
the engine's format, for the definitions it ran with: ``contextadmin_sdk.client.definitions``).

Two modes. **Blocking** (the default, for scripts such as ``simulate_run``): ``event()`` queues
and sends a batch from the caller's thread when it is full or due, retrying up to ``retries``
times and raising ``ReportError`` when the server refuses or stays down (so inside an asyncio
event loop it stalls the loop for as long: use background mode there)::

    reporter = RunReporter("http://127.0.0.1:8000", token)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="InterviewAgent", text="NEXT")
    reporter.close()            # flushes; also done at interpreter exit

**Background** (``background=True``, what the AG2 adapters use inside a chat): the caller's
thread only numbers the event and appends it to a bounded queue (and, with ``spool_dir``, one
JSON line to a spool file); a daemon thread sends batches. Nothing in this mode blocks or
raises into the caller: a slow, down or refusing server is logged once per outage, not per
event. ``start()`` returns at once with a run id chosen here (the server accepts a client's
``run_id``), so the chat never waits for the server to answer.

- **Capacity**: at most ``capacity`` unsent events (default 10 000) in memory. Beyond that,
  with a spool, new events go to the spool only and the sender reads them back in order;
  without one, they are dropped and reporting of the run stops (seqs must be contiguous),
  counted in ``dropped``, with one error logged.
- **Size, shape**: an event larger than any request the server takes (``MAX_EVENT_BYTES``),
  or one it would refuse (``transport.event_encode``) takes no seq and is not sent, so the
  run's later events still flow: logged, counted in ``oversized`` or ``invalid`` (blocking
  mode: a ``ReportError``). Any thread may call ``event()``; a forked child reports nothing.
- **Spool** (``spool_dir``): one ``<run_id>.jsonl`` per run: the start request, then every
  event with its seq, written before ``event()`` returns, so a runtime killed mid-chat loses
  nothing it observed. ``resume(run_id)`` reads it back and re-sends what the server has not
  stored; ``deliver(run_id)`` (or ``python -m contextadmin_sdk.client deliver FILE``) sends it
  and stops, for a run that ended while the server was away. It is deleted once the run has
  ended and everything is acknowledged.
- **Transport** (``transport=``): batches (``batch_size`` events, at most ``MAX_BATCH_BYTES``),
  each the body of a POST to ``/api/runs/<id>/events/`` (``"http"``) or one frame on the run's
  ingest websocket (``"websocket"``, the ``websocket`` extra; ``client/socket_transport``).
  ``"auto"`` takes the websocket when the library is installed; a missing library or a socket
  that is not upgraded falls back to HTTP, with one log line. Both store a batch all or
  nothing and answer it alike; every event carries its seq, so a re-sent batch is idempotent.
  The run start and blocking mode always use HTTP.
- ``close(timeout=...)`` waits up to ``timeout`` seconds for everything to be acknowledged and
  says whether it was; what is left stays in the spool for a later ``resume``.
- **A refused start** (a bad token, an unknown workflow: a 4xx): one error names the cause and
  the fix; the events stay in the spool, or in memory up to ``capacity``, for
  ``retry_start()`` (or ``resume`` in a later process). ``wait_started()`` says whether the
  run exists on the server.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from contextadmin_sdk.client.background import BackgroundSender
from contextadmin_sdk.client.definitions import definitions_fetch, definitions_workflow_check
from contextadmin_sdk.client.lifecycle import exit_flush, reporter_track
from contextadmin_sdk.client.resume import Resumed, delivery_said, spool_read
from contextadmin_sdk.client.socket_transport import TRANSPORTS
from contextadmin_sdk.client.spool_file import SpoolInUse, spool_in_use
from contextadmin_sdk.client.start_body import start_body
from contextadmin_sdk.client.transport import (
    ReportError,
    base_url_check,
    batch_body,
    batch_count,
    encode_record,
    event_encode,
    request_json,
    token_check,
)
from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from contextadmin_sdk.engine.format import ContextVariablesFile

logger = logging.getLogger(__name__)

RESUME_RETRIES = 1  # a resume with a spool asks the server twice before rebuilding from it

DEFAULT_CAPACITY = 10_000
BACKGROUND_BATCH_SIZE = 500  # fewer, larger requests: less of the sender's work on the GIL
DEFAULT_TRANSPORT = "auto"  # the ingest websocket if installed: faster (docs/benchmarks.md)


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
        transport: str = DEFAULT_TRANSPORT,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport: one of {', '.join(TRANSPORTS)}, got {transport!r}")
        self.transport = transport
        self.base_url = base_url_check(base_url)
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
        self.oversized = 0  # events no request could carry (background mode: logged, not sent)
        self.invalid = 0  # events the server would refuse (background mode: logged, not sent)
        self._refusal: str | None = None  # why event() reports nothing (a forked child's)
        self._closed = False  # blocking mode: close() came after the last start
        self.error: str | None = None  # why the background sender gave up, if it did
        self._background = background
        self._next_seq = 1
        self._pending: list[bytes] = []  # blocking mode: encoded events, in seq order
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self._sender: BackgroundSender | None = None
        atexit.register(self._flush_at_exit)
        reporter_track(self)

    # -- public API -------------------------------------------------------------------------
    @property
    def token(self) -> str:
        """The API token, without the whitespace around it (a token read from a file)."""
        return self._token

    @token.setter
    def token(self, token: str) -> None:
        self._token = token_check(token)

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
    def transport_in_use(self) -> str:
        """What the background sender sends events over now: ``"websocket"`` or ``"http"``
        (blocking mode, a missing library or a refused socket: HTTP)."""
        return self._sender.transport_in_use if self._sender is not None else "http"

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
        unresolved: Mapping[str, str] | None = None,
    ) -> str:
        """Start a run on the server and return its id (a retried start is idempotent by id).

        ``definitions``: what the runtime runs with (a parsed config is sent as its canonical
        export with its version and digest), so the run is pinned to them; ``runtime``: what
        reports it (``contextadmin_sdk.client.definitions.runtime_info``); ``unresolved``: why
        the runtime could not read the variables ``context`` leaves out (the run page shows it).
        In background mode the request is queued and the id (``run_id`` or a new one) returned
        at once. Definitions fetched for another workflow (``definitions()``) are a
        ``ValueError`` naming both, sending nothing.
        """
        definitions_workflow_check(definitions, workflow=workflow)
        if run_id is None and self._background:
            run_id = uuid.uuid4().hex
        body = start_body(
            workflow=workflow, enterprise_id=enterprise_id, run_id=run_id,
            environment=environment, context=context, definitions=definitions,
            runtime=runtime, unresolved=unresolved,
        )
        self._closed = False
        if self._background:
            assert run_id is not None
            self.run_id = run_id
            self._next_seq = 1
            self._sender = BackgroundSender(self, start_body=body)
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
            workflow=workflow,
            environment=environment,
            version=version,
            cache_dir=cache_dir,
            **self._server(),
        )

    def _server(self) -> dict[str, Any]:
        """Where and as whom every request of this reporter goes."""
        return {"base_url": self.base_url, "token": self.token, "timeout": self.timeout}

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

    def fetch_state(self, run_id: str, *, retries: int | None = None) -> dict[str, Any]:
        """GET the run's latest state (``{"seq", "state", "provenance", "flips"}``); blocking,
        retried ``retries`` times (default: the reporter's ``retries``)."""
        return self._request("GET", f"/api/runs/{run_id}/state/", None, retries=retries)

    def resume(self, run_id: str, *, check: Callable[[Resumed], None] | None = None) -> Resumed:
        """Continue an existing run: its server state, plus what the spool holds beyond it;
        ``check`` sees what was found first and may refuse it by raising.

        The spool's events the server has not stored are queued for delivery (background
        mode), and the next event gets the seq after the last one observed. Raises
        ``ReportError`` when neither the server nor a spool knows the run, and ``SpoolInUse``
        (one) when a live runtime is still writing the run's spool.
        """
        path = self._spool_path(run_id)
        if path is not None and spool_in_use(path):  # its runtime still reports it
            raise SpoolInUse(path)
        spool = spool_read(path)
        server: dict[str, Any] | None = None
        try:
            # With a spool to rebuild from, a server that is away costs a retry, not the
            # whole backoff: attach() waits for this, on the workflow's own thread or loop.
            kept = spool.start is not None or bool(spool.events)
            server = self.fetch_state(run_id, retries=RESUME_RETRIES if kept else None)
        except ReportError as exc:
            if spool.start is None:
                raise ReportError(
                    f"resume {run_id}: the server has no state for it ({exc}) and no spool "
                    f"holds its start to rebuild it from ({path or 'no spool_dir'})"
                ) from None
            logger.warning(
                "run %s: the server has no state for it (%s); rebuilding it from the spool",
                run_id,
                exc,
            )
        server_seq = int(server["seq"]) if server is not None else 0
        unsent = [event for event in spool.events if event["seq"] > server_seq]
        resumed = Resumed(
            server=server, start=spool.start, unsent=unsent, spool_path=self._spool_path(run_id)
        )
        if check is not None:
            check(resumed)  # may refuse the run: before this reporter takes it or sends a thing
        self.run_id = run_id
        self._closed = False
        self.state = server
        self.last_acked_seq = server_seq
        last_seq = unsent[-1]["seq"] if unsent else server_seq
        self._next_seq = last_seq + 1
        start_body = spool.start if server is None else None
        if self._background:
            self._sender = BackgroundSender(
                self, start_body=start_body, resumed=unsent, spool_append=True
            )
            # Ended on the server already: its spool goes once what it holds is acknowledged.
            self._sender.ended = resumed.status in RUN_ENDED_STATUSES
        else:
            self._pending.extend(encode_record(event) for event in unsent)
        return resumed

    def deliver(self, run_id: str, *, timeout: float | None = 60.0) -> bool:
        """Send what the spool (``spool_dir``) holds of ``run_id`` that the server has not
        stored, then stop: a run that ended, or whose runtime is gone, while the server was
        away. Returns whether all of it is acknowledged (an ended run's spool is then deleted);
        logs how many events went and how the run stands. ``python -m contextadmin_sdk.client
        deliver SPOOL_FILE`` does this from a shell."""
        if self.spool_dir is None:
            raise ValueError("spool_dir: deliver() sends a spool; give the reporter its spool_dir")
        if self.run_id is not None:
            raise ValueError(f"deliver(): the reporter already reports run {self.run_id}")
        self.use_background()
        resumed = self.resume(run_id)
        return delivery_said(run_id=run_id, resumed=resumed, delivered=self.close(timeout))

    def event(self, type: str, **fields: Any) -> int:
        """Queue one event and return its seq; blocking mode sends a batch when full or due.

        An event larger than any request the server takes gets no seq: background mode logs
        it, counts it in ``oversized`` and returns 0; blocking mode raises ``ReportError``.
        """
        if self._sender is not None:
            return self._sender.enqueue({"type": type, **fields})
        if self.run_id is None or self._closed or self._refusal is not None:
            return self._refused_event()
        with self._lock:
            seq = self._next_seq
            data = event_encode({"type": type, **fields, "seq": seq}, full=True)
            self._next_seq += 1
            self._pending.append(data)
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
                count = batch_count(self._pending, batch_size=self.batch_size)
                answer = self._request(
                    "POST", f"/api/runs/{self.run_id}/events/", batch_body(self._pending[:count])
                )
                del self._pending[:count]
                self._acknowledged(answer)
            self._last_flush = time.monotonic()
        return True

    def close(self, timeout: float | None = 10.0) -> bool:
        """Flush what is queued (background mode: for at most ``timeout`` seconds) and stop."""
        atexit.unregister(self._flush_at_exit)
        if self._sender is not None:
            return self._sender.close(timeout)
        self._closed = True
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
        """Close; when the block raised, a failed close is logged, not raised in its place."""
        try:
            self.close()
        except ReportError as failed:
            if exc is None:
                raise
            logger.error("run %s: not flushed when the block raised: %s", self.run_id, failed)

    def _refused_event(self) -> int:
        """No run to report the event to (none started, closed, forked): ``ReportError`` in
        blocking mode; in background mode (before ``start()``) said once, counted, 0."""
        closed = f"run {self.run_id}: event() after close()" if self.run_id else None
        why = self._refusal or f"{closed or 'event() before start()'}: not reported"
        if not self._background:
            raise ReportError(why)
        self.dropped += 1
        if self.dropped == 1:
            logger.error("%s (more: counted in reporter.dropped)", why)
        return 0

    # -- transport --------------------------------------------------------------------------
    def _acknowledged(self, answer: dict[str, Any]) -> None:
        self.last_acked_seq = int(answer["last_seq"])
        if answer.get("flips"):
            self.flips.extend(answer["flips"])
            if self.on_flips is not None:
                self.on_flips(answer["flips"])

    def _spool_path(self, run_id: str) -> Path | None:
        return None if self.spool_dir is None else self.spool_dir / f"{run_id}.jsonl"

    def _flush_at_exit(self) -> None:
        exit_flush(self)

    def _request(
        self, method: str, path: str, body: dict[str, Any] | bytes | None, *,
        retries: int | None = None,
    ) -> dict[str, Any]:
        """One blocking request, retried (``transport.request_json``); ``body``: JSON, or the
        bytes of it."""
        return request_json(
            method=method, path=path,
            data=json.dumps(body).encode() if isinstance(body, dict) else body,
            retries=self.retries if retries is None else retries,
            backoff=self.backoff, max_backoff=self.max_backoff, **self._server(),
        )
