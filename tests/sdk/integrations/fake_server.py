"""A stand-in for the run API (docs/api.md) on loopback, for reporter faults: slow answers,
error statuses, going down and coming back on the same port. Events are checked for contiguous
seqs like the real server; duplicates (a re-sent batch) are acknowledged again."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from devservers.processes import free_port

EVENTS_PATH = re.compile(r"^/api/runs/([^/]+)/events/$")
STATE_PATH = re.compile(r"^/api/runs/([^/]+)/state/$")


class FakeRunServer:
    def __init__(self, *, delay: float = 0.0, port: int | None = None) -> None:
        self.port = port or free_port()
        self.delay = delay
        self.status: int | None = None  # answer every request with this status when set
        self.retry_after: str | None = None  # ... with this Retry-After (a shedding server)
        self.events_posts = 0  # events POSTs received, answered or not
        self.runs: dict[str, dict[str, Any]] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.requests = 0
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeRunServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests += 1
                server.events_posts += EVENTS_PATH.match(self.path) is not None
                if server.delay:
                    time.sleep(server.delay)
                if server.status is not None:
                    return self._answer(server.status, {"error": "scripted failure"})
                if self.headers.get("Authorization", "")[:7] != "Bearer ":
                    return self._answer(401, {"error": "token: required"})
                if self.path == "/api/runs/":
                    run_id = body["run_id"]
                    server.runs.setdefault(run_id, body)
                    server.events.setdefault(run_id, [])
                    return self._answer(201, {"run_id": run_id, "state": {"seq": 0}})
                match = EVENTS_PATH.match(self.path)
                if match is None or match.group(1) not in server.events:
                    return self._answer(404, {"error": "run_id: no such run"})
                stored = server.events[match.group(1)]
                for event in body["events"]:
                    if event["seq"] <= len(stored):
                        continue  # a re-sent seq: acknowledged again
                    if event["seq"] != len(stored) + 1:
                        return self._answer(
                            409, {"error": "seq gap", "expected_seq": len(stored) + 1}
                        )
                    stored.append(event)
                return self._answer(200, {"last_seq": len(stored), "flips": []})

            def do_GET(self) -> None:
                match = STATE_PATH.match(self.path)
                if match is None or match.group(1) not in server.events:
                    return self._answer(404, {"error": "run_id: no such run"})
                seq = len(server.events[match.group(1)])
                return self._answer(200, {"seq": seq, "state": {}, "flips": []})

            def _answer(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                if status >= 500 and server.retry_after is not None:
                    self.send_header("Retry-After", server.retry_after)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def seqs(self, run_id: str) -> list[int]:
        return [event["seq"] for event in self.events.get(run_id, [])]


if __name__ == "__main__":  # python -m tests.sdk.integrations.fake_server PORT DELAY (bench B9)
    import sys

    fake = FakeRunServer(port=int(sys.argv[1]), delay=float(sys.argv[2])).start()
    threading.Event().wait()
