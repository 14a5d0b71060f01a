"""One webhook request, safe by default.

The host is resolved here, at send time, every address checked (loopback, private,
link-local and other non-global ranges are refused unless ``WEBHOOKS_ALLOW_PRIVATE``), and the
connection made to the checked address itself: a DNS answer that changes between the check
and the connect (rebinding) cannot redirect it. TLS is verified against the URL's host name.
A DNS lookup within the connect timeout (the system resolver has none of its own); connect
and read timeouts, and a deadline for the whole request (the two added up): the read
timeout bounds each wait for bytes, so without it a receiver trickling its answer would hold a
worker past its lease while another sent the same delivery. Redirects are not followed (a 3xx
is an answer like any other); the response body is read up to ``RESPONSE_KEEP_BYTES``.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import ipaddress
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from runs.webhooks.services.subscriptions import UrlRefused, address_private, url_clean

RESPONSE_KEEP_BYTES = 500
USER_AGENT = "contextadmin-webhooks/1"


class SendRefused(Exception):
    """The URL may not be sent to (scheme, or an address it resolves to): never retried."""


class SendFailed(Exception):
    """The request did not get an answer (network error, timeout): retried."""


@dataclass
class Answer:
    status: int
    body: bytes  # at most RESPONSE_KEEP_BYTES
    retry_after: str | None
    latency_ms: int


class Deadline:
    """Cuts a connection still unanswered when the request's time is up (a timer thread
    shuts the socket down, which ends any read in progress, TLS included)."""

    def __init__(self, sock: socket.socket, *, seconds: float) -> None:
        self.passed = False
        self._fd = sock.fileno()  # the same descriptor once TLS wraps the socket
        self._lock = threading.Lock()  # a cut never reaches a descriptor closed (and reused)
        self._done = False
        self._timer = threading.Timer(max(0.0, seconds), self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        with self._lock:
            if self._done:
                return
            self.passed = True
            try:
                with socket.socket(fileno=os.dup(self._fd)) as duplicate:
                    duplicate.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the peer closed it already

    def cancel(self) -> None:
        """Stop the timer; called before the socket is closed."""
        with self._lock:
            self._done = True
        self._timer.cancel()


def deadline_s() -> float:
    """How long one request may take in all, from its connect: the two timeouts added up
    (the delivery's lease is twice that)."""
    return settings.WEBHOOKS_CONNECT_TIMEOUT_S + settings.WEBHOOKS_READ_TIMEOUT_S


# The system resolver takes no timeout: lookups run here, and a send waits for one at most
# WEBHOOKS_CONNECT_TIMEOUT_S. A hung lookup keeps its thread until it returns; with every
# thread hung, later lookups wait in the queue and time out alike (DNS is down for all).
_resolver = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="dns")


def address_resolve(host: str, port: int) -> str:
    """Resolve ``host`` (within the connect timeout) and return the address to connect to;
    refuse a private one."""
    lookup = _resolver.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        infos = lookup.result(timeout=settings.WEBHOOKS_CONNECT_TIMEOUT_S)
    except concurrent.futures.TimeoutError:
        within = f"no answer within {settings.WEBHOOKS_CONNECT_TIMEOUT_S:g} s"
        raise SendFailed(f"cannot resolve {host}: {within}") from None
    except OSError as exc:
        raise SendFailed(f"cannot resolve {host}: {exc}") from None
    addresses = [info[4][0] for info in infos]
    if not settings.WEBHOOKS_ALLOW_PRIVATE:
        for address in addresses:
            if address_private(ipaddress.ip_address(address.split("%")[0])):
                raise SendRefused(
                    f"{host} resolves to {address}, a loopback or private address "
                    "(allowed with WEBHOOKS_ALLOW_PRIVATE=1)"
                )
    if not addresses:
        raise SendFailed(f"{host} has no address")
    return addresses[0]


def post(*, url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST ``body`` to ``url`` (in the form ``url_clean`` stores, whenever it was saved);
    return the answer or raise SendRefused / SendFailed."""
    try:
        parts = urlsplit(url_clean(url))
    except UrlRefused as exc:
        raise SendRefused(f"url: {exc}") from None
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = address_resolve(host, port)
    started = time.monotonic()
    try:
        sock = socket.create_connection(
            (address, port), timeout=settings.WEBHOOKS_CONNECT_TIMEOUT_S
        )
    except OSError as exc:
        raise SendFailed(f"cannot connect to {host}:{port}: {exc}") from None
    deadline = Deadline(sock, seconds=deadline_s() - (time.monotonic() - started))
    try:
        sock.settimeout(settings.WEBHOOKS_READ_TIMEOUT_S)
        if parts.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        connection = http.client.HTTPConnection(host, port)
        connection.sock = sock  # the checked address, connected above
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request(
            "POST", path, body=body, headers={**headers, "user-agent": USER_AGENT}
        )
        response = connection.getresponse()
        kept = response.read(RESPONSE_KEEP_BYTES)
        if deadline.passed:  # cut mid-answer, which http.client may read as an early end
            raise TimeoutError
        return Answer(
            status=response.status,
            body=kept,
            retry_after=response.getheader("retry-after"),
            latency_ms=int((time.monotonic() - started) * 1000),
        )
    except (OSError, http.client.HTTPException) as exc:
        if deadline.passed:
            within = f"no complete answer within {deadline_s():g} s"
            raise SendFailed(f"request to {host}:{port} timed out: {within}") from None
        kind = "timed out" if isinstance(exc, TimeoutError) else "failed"
        raise SendFailed(f"request to {host}:{port} {kind}: {exc}") from None
    finally:
        deadline.cancel()
        sock.close()
