"""A small client an agent runtime uses to report a run (stdlib only, no Django).

    reporter = RunReporter("http://127.0.0.1:8000", token)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="InterviewAgent", text="NEXT")
    reporter.close()            # flushes; also done at interpreter exit

Every event gets its seq on the client, so a batch can be re-sent after a timeout or a
dropped connection: the server acknowledges seqs it already has and stores each event once.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from types import TracebackType
from typing import Any

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0


class ReportError(RuntimeError):
    """The server refused a request (a 4xx that retrying cannot fix), or retries ran out."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class RunReporter:
    """Start a run and stream its events in batches, with retries that are safe by seq."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        batch_size: int = 100,
        flush_interval: float = 0.2,
        retries: int = 8,
        timeout: float = 10.0,
        backoff: float = 0.1,
        on_flips: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff
        self.on_flips = on_flips
        self.run_id: str | None = None
        self.state: dict[str, Any] | None = None
        self.flips: list[dict[str, Any]] = []
        self.last_acked_seq = 0
        self._next_seq = 1
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        atexit.register(self._flush_at_exit)

    # -- public API -------------------------------------------------------------------------
    def start(
        self,
        *,
        workflow: str,
        enterprise_id: str,
        run_id: str | None = None,
        environment: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> str:
        """Start a run on the server and return its id (a retried start is idempotent by id)."""
        body: dict[str, Any] = {"workflow": workflow, "enterprise_id": enterprise_id}
        if run_id is not None:
            body["run_id"] = run_id
        if environment is not None:
            body["environment"] = environment
        if context is not None:
            body["context"] = context
        answer = self._request("POST", "/api/runs/", body)
        self.run_id = answer["run_id"]
        self.state = answer["state"]
        last_seq = int(answer["state"].get("seq", 0))
        self.last_acked_seq = last_seq
        self._next_seq = last_seq + 1
        return self.run_id

    def event(self, type: str, **fields: Any) -> int:
        """Queue one event and return its seq; sends a batch when full or due."""
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

    def flush(self) -> None:
        """Send every queued event, retrying until acknowledged."""
        with self._lock:
            if self.run_id is None:
                if self._pending:
                    raise ReportError("start() the run before reporting events")
                return
            while self._pending:
                batch = self._pending[: self.batch_size]
                answer = self._request(
                    "POST", f"/api/runs/{self.run_id}/events/", {"events": batch}
                )
                del self._pending[: len(batch)]
                self.last_acked_seq = int(answer["last_seq"])
                if answer.get("flips"):
                    self.flips.extend(answer["flips"])
                    if self.on_flips is not None:
                        self.on_flips(answer["flips"])
            self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush what is queued."""
        self.flush()
        atexit.unregister(self._flush_at_exit)

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
    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except Exception:
            logger.exception(
                "run %s: could not flush %d events at exit", self.run_id, len(self._pending)
            )

    def _request(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        delay = self.backoff
        last_error: Exception | None = None
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(  # noqa: S310  (base_url is the operator's server)
                self.base_url + path,
                data=data,
                method=method,
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                },
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
            if attempt < self.retries:
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
                delay = min(delay * 2, 5.0)
        raise ReportError(
            f"{method} {path}: gave up after {self.retries + 1} attempts: {last_error}"
        )


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    """Return the server's Retry-After in seconds (capped at a minute), if it sent one."""
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


def _error_body(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read() or b"null")
    except (ValueError, OSError):
        return None
