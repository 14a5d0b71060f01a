"""Describe the machine a figure ran on: CPUs, CPU model, Python, database, channel layer."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
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


def _cpu_times() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields), idle


def cpu_busy(seconds: float = 1.0) -> float:
    """The fraction of all CPUs busy over ``seconds`` (NaN where /proc/stat is missing)."""
    try:
        total0, idle0 = _cpu_times()
        time.sleep(seconds)
        total1, idle1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return float("nan")
    total = total1 - total0
    return 1.0 - (idle1 - idle0) / total if total else 0.0


def _clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """CPU seconds all CPUs have spent busy since boot."""
    total, idle = _cpu_times()
    return (total - idle) / _clock_ticks()


def own_seconds() -> float:
    """CPU seconds used by this process, its reaped children and its live descendants."""
    me = os.getpid()
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ppid = int(fields[1])
        own = int(fields[11]) + int(fields[12])
        reaped = int(fields[13]) + int(fields[14]) if int(entry.name) == me else 0
        stats[int(entry.name)] = (ppid, (own + reaped) / _clock_ticks())
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, stack = 0.0, [me]
    while stack:
        pid = stack.pop()
        total += stats.get(pid, (0, 0.0))[1]
        stack.extend(children.get(pid, []))
    return total


class OtherWork:
    """How much of the CPUs other work (not this benchmark's processes) used since start()."""

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        try:
            self._t, self._busy, self._own = time.monotonic(), busy_seconds(), own_seconds()
        except (OSError, ValueError, IndexError):
            self._t = None

    def share(self) -> float | None:
        if self._t is None:
            return None
        try:
            wall = time.monotonic() - self._t
            other = (busy_seconds() - self._busy) - (own_seconds() - self._own)
        except (OSError, ValueError, IndexError):
            return None
        return max(0.0, other) / (wall * cpu_count()) if wall > 0 else None


def wait_for_quiet(*, threshold: float = 0.15, max_wait: float = 0.0) -> float:
    """Wait (up to ``max_wait`` s) until other work leaves the CPUs idle; return the busy
    fraction last seen. The benchmark's own servers are idle when this is called."""
    deadline = time.monotonic() + max_wait
    while True:
        busy = cpu_busy()
        if not busy > threshold or time.monotonic() >= deadline:
            return busy
        time.sleep(4)


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

    def tag(
        self, layer: str, busy_before: float | None = None, other_work: float | None = None
    ) -> str:
        """A compact description printed on every figure line: the 1-minute load average as
        the figure finished, how busy the CPUs were just before it started (full runs) and
        how much of them other work (not the benchmark's processes) took while it ran: the
        cores may be shared."""
        quiet = "" if busy_before is None else f", CPUs {busy_before:.0%} busy before"
        other = "" if other_work is None else f", other work {other_work:.0%} of the CPUs"
        return (
            f"[{self.cpus} CPU {self.cpu}, Python {self.python}, {self.database}, "
            f"layer {layer}, load {load_average():.2f}{quiet}{other}]"
        )

    def lines(self, layers: dict[str, str]) -> list[str]:
        out = [
            f"machine: {self.cpus} CPUs, {self.cpu}",
            f"python: {self.python} ({sys.implementation.name}), {platform.platform()}",
            f"database: {self.database}",
        ]
        out += [f"channel layer {name}: {text}" for name, text in layers.items()]
        return out
