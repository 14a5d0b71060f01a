"""Debian's nginx in front of test Daphnes, with the config that docs/deploy.md gives.

    proxy = Nginx(workdir=tmp_path, upstreams=[8001, 8002]).start()
    proxy.url                       # http://127.0.0.1:<free port>
    proxy.stop()

The ``nginx`` block of docs/deploy.md is the config under test: ``deploy_doc_config`` takes it
as written and changes only what a loopback test must (the listen line without TLS, the
upstream ports, the log and static paths, no port-80 redirect server). nginx runs in the
foreground (``daemon off``) as this process's child, with its own prefix, pid file and temp
directories in ``workdir``, never as the system service. ``scripts/test`` installs the
``nginx`` package when missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from devservers.processes import (
    PROJECT,
    LocalAddress,
    free_port,
    process_start,
    process_stop,
    wait_for_port,
)

DEPLOY_DOC = PROJECT / "docs" / "deploy.md"
# What a packaged nginx.conf's http block includes: collected static files (the documented
# /static/ alias) are served with their types, so the pages' module scripts load.
MIME_TYPES = (
    "    include /etc/nginx/mime.types;\n" if Path("/etc/nginx/mime.types").exists() else ""
)


def available() -> bool:
    """Whether Debian's nginx is installed here."""
    return binary() is not None


def binary() -> str | None:
    """The nginx executable (Debian puts it in /usr/sbin, often not on a user's PATH)."""
    return shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )


def deploy_doc_block() -> str:
    """The ```nginx block of docs/deploy.md, as a reader copies it."""
    match = re.search(r"```nginx\n(.*?)```", DEPLOY_DOC.read_text(), re.DOTALL)
    if match is None:
        raise LookupError("docs/deploy.md has no ```nginx block")
    return match.group(1)


def deploy_doc_config(*, port: int, upstreams: list[int], workdir: Path) -> str:
    """The documented server config, made to run on loopback without TLS."""
    config = deploy_doc_block()
    # The upstream's server lines: the test's Daphne ports, each with the documented options.
    lines = re.search(r"(    server 127\.0\.0\.1:\d+([^;\n]*);[^\n]*\n)+", config)
    assert lines is not None, "no upstream server lines in the documented config"
    options = lines.group(2)  # the documented lines share their options (max_fails=0)
    servers = "".join(f"    server 127.0.0.1:{p}{options};\n" for p in upstreams)
    config = config[: lines.start()] + servers + config[lines.end() :]
    # Plain HTTP on a free loopback port; no certificates; no port-80 redirect server.
    config = config.replace("listen 443 ssl;", f"listen 127.0.0.1:{port};")
    config = re.sub(r"\n\s*ssl_certificate(_key)?\s[^\n]*", "", config)
    config = re.sub(r"\nserver \{\n    listen 80;.*?\n\}\n", "\n", config, flags=re.DOTALL)
    config = config.replace("server_name contextadmin.example.com;", "server_name 127.0.0.1;")
    config = config.replace("/var/log/nginx/", f"{workdir}/")
    config = config.replace("/srv/contextadmin/staticfiles/", f"{workdir}/static/")
    # (not a bare "443": a free port such as 33443 holds it)
    assert not re.search(r"listen\s+[^;]*\b443\b|\bssl", config), config
    return config


@dataclass
class Nginx(LocalAddress):
    """One nginx master process (and its worker) proxying to the given Daphne ports."""

    workdir: Path
    upstreams: list[int]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def error_log(self) -> Path:
        return self.workdir / "nginx-error.log"

    def config(self) -> str:
        temp = self.workdir / "nginx-temp"
        paths = "\n".join(
            f"    {name}_temp_path {temp}/{name};"
            for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        server = deploy_doc_config(port=self.port, upstreams=self.upstreams, workdir=self.workdir)
        return (
            "daemon off;\n"
            "worker_processes 1;\n"
            f"pid {self.workdir}/nginx.pid;\n"
            f"error_log {self.error_log} warn;\n"
            "worker_rlimit_nofile 16384;\n"
            "events { worker_connections 8192; }\n"
            "http {\n"
            f"{MIME_TYPES}"
            f"{paths}\n"
            f"    access_log {self.workdir}/nginx-default-access.log;\n"
            f"{server}\n"
            "}\n"
        )

    def start(self) -> Nginx:
        executable = binary()
        if executable is None:
            raise FileNotFoundError("nginx not found: install Debian's nginx (scripts/test does)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "nginx-temp").mkdir(exist_ok=True)
        (self.workdir / "static").mkdir(exist_ok=True)
        path = self.workdir / "nginx.conf"
        path.write_text(self.config())
        command = [executable, "-p", str(self.workdir), "-c", str(path), "-e", str(self.error_log)]
        subprocess.run([*command, "-t"], check=True, capture_output=True, timeout=30)
        self.process = process_start(command, log_path=self.workdir / "nginx-stdout.log")
        wait_for_port(self.port, process=self.process)
        return self

    def stop(self) -> None:
        """Fast shutdown: SIGTERM to the master, which stops its workers."""
        process_stop(self.process)
