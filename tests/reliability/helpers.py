"""Tools for the fault tests: a seeded server stack, a TCP proxy that can swallow a response,
an inspector that keeps reconnecting with ``?after=``, and small HTTP helpers.

Everything listens on 127.0.0.1 only; every loop is bounded by a count and a deadline.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextadmin_sdk.client import RunReporter
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import connect

from devservers.processes import Daphne, LocalAddress, manage

PROJECT = Path(__file__).resolve().parents[2]  # where manage.py and contextadmin/ live
DEMO_CONFIG = PROJECT / "contextadmin" / "demo" / "context_variables.json"


def demo_config() -> dict[str, Any]:
    """The Generator demo workflow's context_variables.json."""
    config: dict[str, Any] = json.loads(DEMO_CONFIG.read_text())
    return config


# -- a seeded server stack ---------------------------------------------------------------------


@dataclass
class Credentials:
    secret: str  # a runtime's API token
    session: str  # a staff user's session cookie


def seed(env: dict[str, str]) -> Credentials:
    """Migrate the database named by ``env`` and add the demo workflow, a token, a staff user."""
    out = manage(env, "shell", "-c", "from tests.reliability.server_tasks import seed; seed()")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return Credentials(secret=data["secret"], session=data["session"])


def copy_sqlite(source: Path, target: Path) -> None:
    """Copy a SQLite database consistently (the backup API also takes what is in the WAL)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


def dump_run(env: dict[str, str], run_id: str) -> dict[str, Any]:
    """The run's log as stored, and whether a full replay rebuilds the live state."""
    out = manage(
        env,
        "shell",
        "-c",
        f"from tests.reliability.server_tasks import dump; dump({run_id!r})",
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@dataclass
class Stack:
    """Daphne processes over one seeded database; stopped by the fixture that made them."""

    workdir: Path
    env: dict[str, str]
    credentials: Credentials
    servers: list[Daphne] = field(default_factory=list)

    @property
    def secret(self) -> str:
        return self.credentials.secret

    @property
    def session(self) -> str:
        return self.credentials.session

    def start_daphne(self, *, args: tuple[str, ...] = (), **extra_env: str) -> Daphne:
        """Start one more Daphne (``args``: extra daphne options, e.g. ping timings)."""
        env = {**self.env, **extra_env}
        log_path = self.workdir / f"daphne{len(self.servers)}.log"
        server = Daphne(env=env, log_path=log_path, args=args)
        self.servers.append(server)
        server.start()
        wait_http(f"{server.url}/admin/login/", process=server)
        return server

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob("daphne*.log"))
        )

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def wait_http(url: str, *, process: Daphne | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback)
                if response.status < 500:
                    return
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                return
        except (urllib.error.URLError, OSError):
            pass
        if (
            process is not None
            and process.process is not None
            and process.process.poll() is not None
        ):
            raise RuntimeError(f"daphne exited; see {process.log_path}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} not answering after {timeout}s")
        time.sleep(0.05)


# -- HTTP ------------------------------------------------------------------------------------


def http_json(
    method: str,
    url: str,
    body: Any = None,
    *,
    token: str | None = None,
    session: str | None = None,
    timeout: float = 10.0,
) -> tuple[int, Any]:
    """Send a request and return (status, decoded JSON body), 4xx/5xx included."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if session:
        headers["Cookie"] = f"sessionid={session}"
    request = urllib.request.Request(  # noqa: S310 (loopback)
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers=headers,
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


class RecordingReporter(RunReporter):
    """A RunReporter that keeps every answer the server gave (to see acks of retried seqs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answers: list[dict[str, Any]] = []

    def _request(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = super()._request(method, path, body)
        self.answers.append(answer)
        return answer


def varied_events(count: int, *, start: int = 1) -> list[dict[str, Any]]:
    """Events of every kind whose changes matter: context sets, agent turns, a flip, tools."""
    events: list[dict[str, Any]] = []
    for i in range(start, start + count):
        kind = i % 5
        if kind == 0:
            events.append({"type": "context_set", "name": "concept_overview", "value": f"plan {i}"})
        elif kind == 1:
            events.append(
                {"type": "context_set", "name": "concept_overview", "value": f"overview-{i}"}
            )
        elif kind == 2:
            text = "NEXT" if i % 50 == 2 else f"turn {i}"
            events.append({"type": "agent_text", "agent": "InterviewAgent", "text": text})
        elif kind == 3:
            events.append(
                {
                    "type": "tool_response",
                    "agent": "ContextVariablesAgent",
                    "tool": "save_context_plan",
                    "status": "success",
                    "data": {"saved": i},
                }
            )
        else:
            events.append({"type": "agent_text", "agent": "user", "text": f"answer {i}"})
    return events


# -- a TCP proxy that can swallow one response -------------------------------------------------


class TcpProxy(LocalAddress):
    """Forward 127.0.0.1:<port> to an upstream port; optionally swallow one events response.

    ``arm(callback)``: the next ``POST /api/runs/.../events/`` is forwarded, and when the
    server's response arrives (so the batch is committed) it is *not* passed on: ``callback``
    runs (the test kills the server there) and the client's connection is cut. The client
    never learns that its batch was stored.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.listener.settimeout(0.2)
        self.port = int(self.listener.getsockname()[1])
        self.swallowed = threading.Event()
        self._armed: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._stopped = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, daemon=True)

    def start(self) -> TcpProxy:
        self._acceptor.start()
        return self

    def arm(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._armed = callback

    def stop(self) -> None:
        self._stopped.set()
        self._acceptor.join(timeout=5)
        self.listener.close()
        with self._lock:
            for sock in list(self._sockets):
                _close(sock)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
        except OSError:  # the server is down: the client sees its connection cut
            _close(client)
            return
        upstream.settimeout(None)
        with self._lock:
            self._sockets.update((client, upstream))
        request_head = bytearray()

        def client_to_upstream() -> None:
            try:
                while chunk := client.recv(65536):
                    if len(request_head) < 128:
                        request_head.extend(chunk[:128])
                    upstream.sendall(chunk)
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                _close(upstream)

        pump = threading.Thread(target=client_to_upstream, daemon=True)
        pump.start()
        first = True
        try:
            while chunk := upstream.recv(65536):
                if first:
                    first = False
                    line = bytes(request_head).split(b"\r\n", 1)[0]
                    is_events = line.startswith(b"POST /api/runs/") and b"/events/" in line
                    with self._lock:
                        callback = self._armed if is_events else None
                        if callback is not None:
                            self._armed = None
                    if callback is not None:
                        callback()
                        self.swallowed.set()
                        return
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(client)
            _close(upstream)
            pump.join(timeout=5)
            with self._lock:
                self._sockets.discard(client)
                self._sockets.discard(upstream)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


# -- an inspector that reconnects ------------------------------------------------------------


class Inspector(threading.Thread):
    """Watch a run like the inspector page: resume with ``?after=<last seq>`` after any drop.

    Keeps what a user would see: the seqs received in order, and the context rebuilt from the
    first snapshot plus every event's ``changes``. Anything the protocol forbids (a gap, a
    duplicate, a resume snapshot at the wrong seq or with another state) goes to ``errors``.

    ``drop``: a random.Random; when given, the socket is dropped after 1..``drop_max`` events,
    alternately with a clean close and by cutting the TCP connection.
    """

    def __init__(
        self,
        ws_base: Callable[[], str],
        run_id: str,
        session: str,
        *,
        until: int,
        deadline_s: float = 60.0,
        drop: random.Random | None = None,
        drop_max: int = 60,
        max_connects: int = 2_000,
        sample: set[int] | None = None,
        after: int | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.first_after = after
        self.ws_base = ws_base
        self.run_id = run_id
        self.session = session
        self.until = until
        self.deadline = time.monotonic() + deadline_s
        self.drop = drop
        self.drop_max = drop_max
        self.max_connects = max_connects
        self.sample = sample or set()
        self.seqs: list[int] = []
        self.context: dict[str, Any] = {}
        self.contexts_at: dict[int, dict[str, Any]] = {}
        self.errors: list[str] = []
        self.connects = 0
        self.failed_connects = 0
        self.drops = 0
        self.pongs: list[int] = []
        self.snapshot_seq = 0
        self._had_snapshot = False
        self.stop_flag = threading.Event()
        self.connected = threading.Event()

    @property
    def last_seq(self) -> int:
        return self.seqs[-1] if self.seqs else self.snapshot_seq

    def run(self) -> None:
        backoff = 0.02
        while (
            not self.stop_flag.is_set()
            and self.last_seq < self.until
            and time.monotonic() < self.deadline
            and self.connects + self.failed_connects < self.max_connects
        ):
            try:
                self._session_once()
                backoff = 0.02
            except (ConnectionClosed, InvalidHandshake, InvalidStatus, OSError, TimeoutError):
                self.failed_connects += 1
                time.sleep(backoff)
                backoff = min(backoff * 2, 0.5)

    def _session_once(self) -> None:
        after = self.last_seq if self._had_snapshot else self.first_after
        query = "" if after is None else f"?after={after}"
        base = self.ws_base()
        with connect(
            f"{base}/ws/runs/{self.run_id}/{query}",
            additional_headers={
                "Origin": base.replace("ws://", "http://"),
                "Cookie": f"sessionid={self.session}",
            },
            open_timeout=5,
            close_timeout=0.1,
        ) as ws:
            snapshot = json.loads(ws.recv(timeout=5))
            if snapshot.get("type") != "snapshot":
                self.errors.append(f"first message is not a snapshot: {snapshot}")
                return
            self.connects += 1
            self.connected.set()
            context = snapshot["state"]["context"]
            if not self._had_snapshot:
                self._had_snapshot = True
                self.snapshot_seq = snapshot["seq"]
                self.context = copy.deepcopy(context)
            else:
                if snapshot["seq"] != after:
                    self.errors.append(
                        f"resumed after {after} but snapshot is at {snapshot['seq']}"
                    )
                if context != self.context:
                    self.errors.append(f"snapshot at {after} differs from the events' changes")
            budget = self.drop.randint(1, self.drop_max) if self.drop else None
            while self.last_seq < self.until and time.monotonic() < self.deadline:
                if self.stop_flag.is_set():
                    return
                try:
                    message = json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    continue
                self._take(message)
                if budget is not None and message.get("type") == "event":
                    budget -= 1
                    if budget <= 0:
                        self.drops += 1
                        if self.drops % 2:
                            ws.close_socket()  # a network failure: no closing handshake
                        else:
                            ws.close()
                        return

    def _take(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "pong":
            self.pongs.append(message["seq"])
            return
        if kind != "event":
            self.errors.append(f"unexpected message {str(message)[:200]}")
            return
        seq = message["seq"]
        if seq != self.last_seq + 1:
            self.errors.append(f"after {self.last_seq} got {seq}")
            if seq <= self.last_seq:
                return
        for name, change in message.get("changes", {}).items():
            self.context[name] = change["new"]
        self.seqs.append(seq)
        if seq in self.sample:
            self.contexts_at[seq] = copy.deepcopy(self.context)

    def finish(self, timeout: float) -> None:
        """Wait for the inspector to see everything (or its deadline), then stop it."""
        self.join(timeout=timeout)
        self.stop_flag.set()
        self.join(timeout=5)


def wait_until(predicate: Callable[[], bool], *, timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def silent_inspector(port: int, run_id: str, session: str) -> socket.socket:
    """Open an inspector websocket and never read from it again (nor answer pings)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fill up quickly
    sock.connect(("127.0.0.1", port))
    sock.settimeout(5)
    sock.sendall(
        (
            f"GET /ws/runs/{run_id}/ HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://127.0.0.1:{port}\r\nCookie: sessionid={session}\r\n\r\n"
        ).encode()
    )
    head = sock.recv(12)
    if head != b"HTTP/1.1 101":
        raise RuntimeError(f"websocket handshake refused: {head!r}")
    return sock


def rss_bytes(pid: int) -> int:
    """A process's resident memory (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def postgres_run_log(database_url: str, run_id: str) -> tuple[list[tuple[int, Any]], int]:
    """What PostgreSQL holds of a run, read past the server: its events' (seq, payload) in seq
    order, and its last_seq."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT seq, payload FROM runs_runevent WHERE run_id = %s ORDER BY seq", [run_id]
        ).fetchall()
        (last_seq,) = connection.execute(
            "SELECT last_seq FROM runs_run WHERE id = %s", [run_id]
        ).fetchone()
    return rows, last_seq
