"""Describe the machine a figure ran on: CPUs, CPU model, Python, database, channel layer."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def redis_version() -> str:
    try:
        out = subprocess.run(
            ["redis-server", "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "redis ?"
    for part in out.split():
        if part.startswith("v="):
            return f"Redis {part[2:]}"
    return "Redis ?"


@dataclass(frozen=True)
class Machine:
    cpus: int
    cpu: str
    python: str
    database: str  # e.g. "SQLite 3.40.1"

    @classmethod
    def here(cls, database: str) -> Machine:
        return cls(cpu_count(), cpu_model(), platform.python_version(), database)

    def tag(self, layer: str) -> str:
        """A compact description printed on every figure line, with the 1-minute load average
        as the figure finished (the cores may be shared with other work)."""
        return (
            f"[{self.cpus} CPU {self.cpu}, Python {self.python}, {self.database}, "
            f"layer {layer}, load {load_average():.2f}]"
        )

    def lines(self, layers: dict[str, str]) -> list[str]:
        out = [
            f"machine: {self.cpus} CPUs, {self.cpu}",
            f"python: {self.python} ({sys.implementation.name}), {platform.platform()}",
            f"database: {self.database}",
        ]
        out += [f"channel layer {name}: {text}" for name, text in layers.items()]
        return out
