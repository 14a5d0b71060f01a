"""Output helpers shared by the management commands."""

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError


def write_bytes(stdout: Any, data: bytes) -> None:
    """Write the exact bytes (UTF-8 whatever the locale) to a real stdout, else as text."""
    binary = getattr(getattr(stdout, "_out", None), "buffer", None)
    if binary is not None:
        stdout.flush()
        binary.write(data)
        binary.flush()
    else:
        stdout.write(data.decode("utf-8"), ending="")


def output_write(*, stdout: Any, output: str | None, data: bytes) -> None:
    """Write to ``-o FILE`` when given (a CommandError naming it if it cannot), else stdout."""
    if output:
        try:
            Path(output).write_bytes(data)
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror}") from None
    else:
        write_bytes(stdout, data)
