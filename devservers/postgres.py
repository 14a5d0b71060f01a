"""A throwaway PostgreSQL cluster for tests, from Debian's server binaries, on loopback.

    server = Postgres().start()          # initdb + postgres on a free 127.0.0.1 port
    url = server.create_database("app")  # postgres://postgres@127.0.0.1:<port>/app
    ...
    server.stop()                        # fast shutdown, data directory removed

PostgreSQL refuses to run as root. As root (CI containers) the cluster belongs to the
``postgres`` user that Debian's package creates (``nobody`` when there is none): its directory
is made with ``mkdtemp`` under the system temp dir (pytest's own temp dirs are 0700 root, which
the server could not enter), ``chown``-ed to that user, and ``initdb``/``postgres`` run as it
through ``subprocess``'s ``user=``/``group=``. As any other user they simply run as that user.
Authentication is ``trust`` on 127.0.0.1 only; the unix socket lives in the cluster directory.
``fsync`` is off: the tests check concurrency, not crash durability of the disk.

The binaries are found in ``$PG_BIN``, else the newest ``/usr/lib/postgresql/<version>/bin``,
else on ``PATH``. ``scripts/test`` installs the ``postgresql`` package when missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from devservers.processes import free_port, process_start, process_stop, wait_for_port

START_TIMEOUT_S = 30.0
SUPERUSER = "postgres"


def pg_bin() -> Path:
    """Return the directory holding ``initdb`` and ``postgres``."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise FileNotFoundError(
        "PostgreSQL server binaries not found: install Debian's postgresql package "
        "(scripts/test does) or set PG_BIN"
    )


def available() -> bool:
    """Whether a PostgreSQL server can be started here."""
    try:
        pg_bin()
    except FileNotFoundError:
        return False
    return True


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged account to run the server as when we are root (None otherwise)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and there is no postgres or nobody user to run as")


@dataclass
class Postgres:
    """One PostgreSQL cluster: a temp data directory and a ``postgres`` child process."""

    port: int = field(default_factory=free_port)
    workdir: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    def url(self, database: str = "postgres") -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _as_user(self) -> dict[str, object]:
        account = _run_as()
        if account is None:
            return {}
        return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def start(self) -> Postgres:
        binaries = pg_bin()
        account = _run_as()
        self.workdir = Path(tempfile.mkdtemp(prefix="contextadmin-pg-"))
        if account is not None:
            os.chown(self.workdir, account.pw_uid, account.pw_gid)
        data = self.workdir / "data"
        self.log_path = self.workdir / "postgres.log"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": str(self.workdir),
        }
        try:
            subprocess.run(
                [
                    str(binaries / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--no-sync",
                    "--no-instructions",
                ],
                cwd=self.workdir,
                env=env,
                capture_output=True,
                check=True,
                timeout=120,
                **self._as_user(),  # type: ignore[arg-type]
            )
            self.log_path.touch()
            if account is not None:
                os.chown(self.log_path, account.pw_uid, account.pw_gid)
            self.process = process_start(
                [
                    str(binaries / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(self.port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"unix_socket_directories={self.workdir}",
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=100",
                ],
                cwd=self.workdir,
                env=env,
                log_path=self.log_path,
                **self._as_user(),
            )
            wait_for_port(self.port, timeout=START_TIMEOUT_S, process=self.process)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with psycopg.connect(self.url(), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def create_database(self, name: str) -> str:
        """Create a database and return its ``DATABASE_URL``."""
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then remove the cluster directory."""
        process_stop(self.process, sig=signal.SIGINT, timeout=20)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
