"""Start real servers for tests and benchmarks: Daphne, redis-server. Loopback, free ports."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    """Return a TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(
    port: int, *, timeout: float = 30.0, process: subprocess.Popen | None = None
) -> None:
    """Wait until something accepts connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"server exited with {process.returncode} before listening on {port}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def process_start(args: list[str], *, log_path: Path, **popen: Any) -> subprocess.Popen[bytes]:
    """Start a server with its output (stdout and stderr) appended to ``log_path``."""
    with open(log_path, "ab") as log:  # the child keeps its own copy
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, **popen)


def process_stop(
    process: subprocess.Popen[bytes] | None, *, sig: int = signal.SIGTERM, timeout: float = 10
) -> None:
    """Stop a server we started: ``sig``, then SIGKILL if it has not exited within ``timeout``."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py`` in a subprocess with the given environment."""
    return subprocess.run(
        [sys.executable, str(PROJECT / "manage.py"), *args],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def server_env(database_url: str, **extra: str) -> dict[str, str]:
    """The environment of a test server: a file database, debug off for realism where asked."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_SETTINGS"))}
    env.update(
        DJANGO_SETTINGS_MODULE="contextadmin.settings",
        DATABASE_URL=database_url,
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_SECURE_SSL="0",  # plain HTTP on loopback, also with DJANGO_DEBUG=0
        PYTHONUNBUFFERED="1",
    )
    env.pop("REDIS_URL", None)
    env.update(extra)
    return env


class LocalAddress:
    """The http:// and ws:// URLs of a server listening on 127.0.0.1:``port``."""

    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


@dataclass
class Daphne(LocalAddress):
    """One Daphne process serving contextadmin."""

    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    args: tuple[str, ...] = ()  # extra Daphne options, e.g. ("--ping-timeout", "5")
    application: str = "contextadmin.asgi:application"

    def start(self) -> Daphne:
        self.process = process_start(
            [
                str(BIN / "daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--websocket-max-message-size",
                "1048576",
                *self.args,
                self.application,
            ],
            env=self.env,
            cwd=PROJECT,
            log_path=self.log_path,
        )
        wait_for_port(self.port, process=self.process)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        process_stop(self.process, sig=sig)

    def stop(self) -> None:
        process_stop(self.process)


@dataclass
class Redis:
    """A throwaway redis-server on a free loopback port."""

    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Redis:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, process=self.process)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
