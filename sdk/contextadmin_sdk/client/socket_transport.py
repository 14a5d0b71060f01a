"""Background mode's websocket transport: each batch goes over the run's ingest socket
(``/ws/ingest/<run_id>/``) as one frame, the events POST's body, and the server answers it as
the POST does (``batch_ack``: ``last_seq``, ``flips``, ``acks``; or an error with its status).

It needs the optional ``websockets`` library (``pip install "./sdk[websocket]"`` from a checkout),
imported only when a reporter uses it. Everything else is the HTTP transport's: a batch is
stored all or nothing, its seqs make a re-send after a reconnect idempotent, a refusal is the
same ``ReportError`` (status, body, ``Retry-After``), a dropped or unreachable server is a
``ReportError`` without a status (the sender backs off and reconnects). A server or proxy that
does not upgrade the connection raises ``SocketUnavailable``: the sender goes on over HTTP.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import urllib.parse
from typing import Any

from contextadmin_sdk.client.transport import (
    RETRYABLE_STATUSES,
    ReportError,
    parse_retry_after,
)

logger = logging.getLogger("contextadmin_sdk.client.reporter")  # one logger for the reporter

TRANSPORTS = ("auto", "http", "websocket")
ANSWER_MAX_BYTES = 16 * 1024 * 1024  # a batch's acks and flips


class SocketUnavailable(Exception):
    """The ingest socket cannot be used here (no library, or no upgrade): report over HTTP."""


def websockets_import() -> Any:
    """The ``websockets`` sync client module; ``SocketUnavailable`` when it is not installed."""
    try:
        return importlib.import_module("websockets.sync.client")
    except ImportError as exc:
        raise SocketUnavailable(
            f"the websockets library is not installed ({exc}); "
            'pip install "./sdk[websocket]" (from a checkout of contextadmin) to report over the '
            "ingest websocket"
        ) from None


def socket_connection(
    *, transport: str, base_url: str, run_id: str | None, timeout: float
) -> SocketConnection | None:
    """The run's ingest socket when ``transport`` asks for it and the ``websockets`` library
    is installed; otherwise None (HTTP), said in one log line."""
    if transport == "http" or run_id is None:
        return None
    try:
        return SocketConnection(base_url=base_url, run_id=run_id, timeout=timeout)
    except SocketUnavailable as exc:
        level = logging.WARNING if transport == "websocket" else logging.INFO
        logger.log(level, "run %s: %s; reporting over HTTP", run_id, exc)
        return None


class SocketConnection:
    """One run's ingest socket, opened once the run exists (or by the first batch) and again
    after a failure."""

    def __init__(self, *, base_url: str, run_id: str, timeout: float) -> None:
        self._client = websockets_import()
        parts = urllib.parse.urlsplit(base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        self.path = f"/ws/ingest/{run_id}/"
        self.url = f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}{self.path}"
        self._timeout = timeout
        self._socket: Any = None
        self._stack = contextlib.ExitStack()
        self._token: str | None = None

    def batch_send(self, data: bytes, *, token: str) -> dict[str, Any]:
        """Send one batch (``{"events": [...]}`` as JSON) and return the server's answer."""
        from websockets.exceptions import ConnectionClosed

        if self._socket is None or token != self._token:
            self.open(token=token)
        failed: Exception | None = None
        try:
            self._socket.send(data, text=True)
        except (ConnectionClosed, OSError) as exc:
            failed = exc  # refused at connect: the server said why before closing; read it
        try:
            while True:
                answer = json.loads(self._socket.recv(timeout=self._timeout))
                if isinstance(answer, dict) and answer.get("type") in ("batch_ack", "error"):
                    break  # anything else (a newer server's notice) is not this batch's answer
            if failed is not None and answer["type"] != "error":
                raise failed  # an answer to an earlier batch cannot be: treat as a drop
        except (ConnectionClosed, OSError, TimeoutError, ValueError) as exc:
            self.close()
            cause = failed or exc
            raise ReportError(f"WS {self.path}: {type(cause).__name__}: {cause}") from None
        if answer["type"] == "batch_ack":
            return answer
        self.close()  # a refusal at connect closes the socket; after one, start afresh
        status = answer.get("status")
        if status == 429 and "retry_after" not in answer:  # the token's sockets are all open
            raise SocketUnavailable(f"the server refused the socket: {answer.get('error')}")
        raise ReportError(
            f"WS {self.path}: {status} {answer.get('error')}",
            status=status if isinstance(status, int) else None,
            body=answer,
            retry_after=parse_retry_after(
                str(answer["retry_after"]) if "retry_after" in answer else None
            ),
        )

    def open(self, *, token: str) -> None:
        """Connect (again); raise ``ReportError`` (retry later) or ``SocketUnavailable``."""
        from websockets.exceptions import InvalidHandshake, InvalidMessage, InvalidStatus

        self.close()
        stack = contextlib.ExitStack()  # connect() is a context manager; close() exits it
        try:
            self._socket = stack.enter_context(self._client.connect(
                self.url,
                additional_headers={"Authorization": f"Bearer {token}"},
                open_timeout=self._timeout,
                close_timeout=1,
                compression=None,  # JSON batches: deflate would cost both sides' CPU
                proxy=None,  # as the HTTP transport, which uses no proxy either
                max_size=ANSWER_MAX_BYTES,
            ))
        except InvalidStatus as exc:  # answered over HTTP, not upgraded
            status = exc.response.status_code
            if status in RETRYABLE_STATUSES:  # a proxy whose upstream is down, an overload
                raise ReportError(
                    f"WS {self.path}: {status} at the handshake",
                    status=status,
                    retry_after=parse_retry_after(exc.response.headers.get("Retry-After")),
                ) from None
            raise SocketUnavailable(f"the handshake was answered {status}") from None
        except InvalidMessage as exc:
            if isinstance(exc.__cause__, EOFError | OSError):  # closed mid-handshake: going away
                raise ReportError(f"WS {self.path}: {exc}") from None
            raise SocketUnavailable(f"the handshake failed: {exc}") from None  # not HTTP/1.1
        except InvalidHandshake as exc:
            raise SocketUnavailable(f"the handshake failed: {exc}") from None
        except (OSError, TimeoutError) as exc:
            raise ReportError(f"WS {self.path}: {type(exc).__name__}: {exc}") from None
        self._token = token
        self._stack = stack

    def close(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(Exception):  # a broken socket: nothing more to do
                self._stack.close()
            self._socket = None
