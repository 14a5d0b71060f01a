"""A run's spool file: JSON lines, each in the operating system's page cache before ``write``
returns, so a process killed right after (SIGKILL included) loses none of them.

Where the platform can reserve disk space (``os.posix_fallocate``), lines are copied into a
shared memory map of the file, reserved ahead in ``CHUNK_BYTES`` steps: no system call per
line, which is what a hook on an agent's turn pays most for (docs/benchmarks.md, B9.ag2). The
space is reserved before it is mapped, so a full disk is an ``OSError`` when a chunk is taken,
never a ``SIGBUS`` inside a copy. Elsewhere, and for a line too large for a chunk, each line is
one ``write(2)``.

While open, the file ends in zeros past its last line; ``close`` cuts them. A reader ignores
what follows the last newline (a torn line, or the zeros of a process that was killed), and
reopening a spool to append starts right after its last complete line.

An open spool is locked (``flock``, where the platform has it): a second writer (a resume or
``deliver`` from another process while the runtime still runs) gets ``SpoolInUse`` instead of
writing into, or cutting, a file another process has mapped.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
from pathlib import Path
from typing import Any

from contextadmin_sdk.client.transport import ReportError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, and no mapping either
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CHUNK_BYTES", "SpoolFile", "SpoolInUse", "events_after", "spool_in_use", "spool_open",
]

logger = logging.getLogger("contextadmin_sdk.client")

CHUNK_BYTES = 1 << 16  # reserved and mapped at a time (per open spool); a longer line goes directly
_PAGE = mmap.ALLOCATIONGRANULARITY
_TAIL_BLOCK = 1 << 16  # read backwards in blocks of this size to find the last line


class SpoolInUse(ReportError):
    """A live runtime (another process, or another reporter here) is writing this spool."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"spool {path} is being written by a live runtime (another process or reporter has "
            "it open): that runtime reports the run; deliver or resume it once it has ended"
        )
        self.path = path


def spool_in_use(path: Path) -> bool:
    """Whether a live runtime has the spool at ``path`` open (it holds the spool's lock)."""
    if fcntl is None or not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases the lock, when it was taken
    return False


class SpoolFile:
    """Append-only JSON lines: ``write``, ``tell``, ``close`` (and ``add_event``)."""

    def __init__(self, path: Path, *, append: bool) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise SpoolInUse(path) from None
            if not append:
                os.ftruncate(self._fd, 0)
            # After the last complete line: a torn one, or a killed writer's zeros, goes.
            self._end = _content_end(self._fd, os.fstat(self._fd).st_size) if append else 0
        except BaseException:
            os.close(self._fd)
            raise
        self._map: mmap.mmap | None = None
        self._map_start = 0  # file offset of the map's first byte
        self._mapped = hasattr(os, "posix_fallocate")
        self.closed = False
        self.broken: str | None = None  # why lines can no longer be written (a full disk)

    def add_event(self, data: bytes, *, run_id: str | None) -> bool:
        """Append one event's line (``data``: its JSON); False when it could not be written.

        A write error (a full disk, say) is logged once and ends the spooling: the events are
        then kept in memory only, and the spool keeps what it had.
        """
        if self.broken is not None:
            return False
        try:
            self.write(b'{"event":' + data + b"}\n")
            return True
        except OSError as exc:
            self.broken = f"{exc.strerror or exc}"
            logger.error(
                "run %s: could not write the spool %s (%s): its later events are kept in "
                "memory only",
                run_id,
                self.path,
                self.broken,
            )
            return False

    def write(self, line: bytes) -> int:
        """Append ``line`` (one JSON document and its newline)."""
        if self.closed:
            raise ValueError("write to a closed spool")
        end = self._end
        if not self._mapped or len(line) > CHUNK_BYTES - _PAGE:
            self._unmap()
            written = os.pwrite(self._fd, line, end)
            while written < len(line):  # a short write: rare, on a regular file
                written += os.pwrite(self._fd, line[written:], end + written)
            self._end = end + len(line)
            return len(line)
        mapped = self._map
        offset = end - self._map_start
        if mapped is None or offset + len(line) > len(mapped):
            try:
                mapped = self._remap(end)
            except OSError:  # no room for a chunk (or no mapping here): write lines directly
                self._mapped = False
                return self.write(line)
            offset = end - self._map_start
        mapped[offset : offset + len(line)] = line
        self._end = end + len(line)
        return len(line)

    def tell(self) -> int:
        """Where the next line starts (the end of the last line)."""
        return self._end

    def close(self) -> None:
        """Unmap, cut the reserved zeros, close."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._map is not None:
                self._map.close()
                self._map = None
            os.ftruncate(self._fd, self._end)
        finally:
            os.close(self._fd)

    def _remap(self, end: int) -> mmap.mmap:
        """Reserve and map the next chunk, from the page that holds ``end``."""
        self._unmap()
        start = end - end % _PAGE
        os.posix_fallocate(self._fd, start, CHUNK_BYTES)  # ENOSPC here, not SIGBUS later
        self._map = mmap.mmap(self._fd, CHUNK_BYTES, offset=start)
        self._map_start = start
        return self._map

    def _unmap(self) -> None:
        """Before a direct write: the next mapped line maps afresh from the new end."""
        if self._map is not None:
            self._map.close()
            self._map = None


def spool_open(
    path: Path, *, append: bool, first_line: bytes | None, run_id: str | None
) -> SpoolFile | None:
    """Open a run's spool (its directory made first) and write ``first_line`` (the start); None
    when it cannot be (a read-only directory, a file where the directory should be, a full
    disk): said in one error, and the run is reported without a spool, as after a full disk.
    ``SpoolInUse`` still raises: another runtime reports that run."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        spool = SpoolFile(path, append=append)
    except SpoolInUse:
        raise
    except OSError as exc:
        why = exc.strerror or str(exc)
    else:
        try:
            if first_line is not None:
                spool.write(first_line + b"\n")
            return spool
        except OSError as exc:
            spool.close()
            why = exc.strerror or str(exc)
    logger.error(
        "run %s: could not open the spool %s (%s): the run is reported without one, its "
        "unsent events kept in memory only (up to capacity)",
        run_id,
        path,
        why,
    )
    return None


def events_after(
    path: Path, offset: int, *, end: int | None, most: int
) -> tuple[list[dict[str, Any]], int | None]:
    """Read back up to ``most`` events spooled from ``offset`` (an overflow, in seq order), and
    the offset after them; None once caught up with ``end`` (an open spool's last line; past it
    lie the zeros it reserved) or, with ``end`` None, the file's last complete line."""
    events: list[dict[str, Any]] = []
    with path.open("rb") as spool:
        spool.seek(offset)
        while len(events) < most:
            line = spool.readline(-1 if end is None else max(0, end - spool.tell()))
            if not line.endswith(b"\n"):
                return events, None
            events.append(json.loads(line)["event"])
            offset = spool.tell()
    return events, offset


def _content_end(fd: int, size: int) -> int:
    """The offset right after the file's last newline (0 when it has none)."""
    position = size
    while position > 0:
        start = max(0, position - _TAIL_BLOCK)
        block = os.pread(fd, position - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        position = start
    return 0
