"""A real webhook receiver for the tests: an HTTP server on loopback that records each request
and verifies its signature with the ``standardwebhooks`` library, answering as scripted."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    delay_s: float = 0.0  # hang this long before answering
    drip_s: float = 0.0  # trickle the answer's headers over this long (one each 0.2 s)


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    payload: Any  # the verified, parsed body (None when the signature did not verify)
    error: str
    at: float
    path: str = ""  # the request line's target, as sent

    @property
    def message_id(self) -> str:
        return self.headers["webhook-id"]


class Receiver:
    """``replies`` are used in order, then ``default``; ``secret`` verifies the signatures."""

    def __init__(
        self, *, secret: str = "", port: int = 0, tls: tuple[str, str] | None = None
    ) -> None:
        self.secret = secret
        self.replies: list[Reply] = []
        self.default = Reply()
        self.rule: Callable[[Received], Reply | None] | None = None  # first, when it answers
        self.received: list[Received] = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                payload, error = None, ""
                try:
                    payload = Webhook(receiver.secret).verify(body, headers)
                except (WebhookVerificationError, ValueError) as exc:
                    error = str(exc) or type(exc).__name__
                with receiver.arrived:
                    received = Received(headers, body, payload, error, time.monotonic(), self.path)
                    reply = receiver.rule(received) if receiver.rule else None
                    if reply is None:
                        reply = receiver.replies.pop(0) if receiver.replies else receiver.default
                    receiver.received.append(received)
                    receiver.arrived.notify_all()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.drip_s:
                    self._drip(reply)
                    return
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the sender gave up (timeout) or died

            def _drip(self, reply: Reply) -> None:
                """Answer a header at a time, each within any read timeout, never done soon."""
                try:
                    self.wfile.write(f"HTTP/1.1 {reply.status} OK\r\n".encode())
                    ends = time.monotonic() + reply.drip_s
                    while time.monotonic() < ends:
                        self.wfile.write(b"x-drip: 1\r\n")
                        self.wfile.flush()
                        time.sleep(0.2)
                    self.wfile.write(
                        b"content-length: %d\r\n\r\n%s" % (len(reply.body), reply.body)
                    )
                except OSError:
                    pass  # the sender cut the connection

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:  # (certificate file, key file)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/hook", *, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait(self, count: int, *, timeout: float = 10.0) -> list[Received]:
        """Wait until ``count`` requests arrived; return them all."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.received)} of {count} requests arrived")
                self.arrived.wait(left)
            return list(self.received)

    def events(self) -> list[str]:
        return [json.loads(r.body)["type"] for r in self.received]
