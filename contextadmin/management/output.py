"""Output helpers shared by the management commands."""

from typing import Any


def write_bytes(stdout: Any, data: bytes) -> None:
    """Write the exact bytes (UTF-8 whatever the locale) to a real stdout, else as text."""
    binary = getattr(getattr(stdout, "_out", None), "buffer", None)
    if binary is not None:
        stdout.flush()
        binary.write(data)
        binary.flush()
    else:
        stdout.write(data.decode("utf-8"), ending="")
