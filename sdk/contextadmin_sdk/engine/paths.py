"""Dot paths into nested JSON-like data (``a.b.0.c``), shared by the resolver, state and MongoDB.

A part that is all digits indexes a list; on a mapping every part is a plain key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["drill", "split_path"]


def split_path(path: str) -> list[str]:
    """Split ``a.b.0`` into its parts."""
    return path.split(".")


def drill(value: Any, parts: Sequence[str]) -> tuple[bool, Any]:
    """Follow ``parts`` into ``value``; return (found, value) instead of raising."""
    for part in parts:
        if isinstance(value, Mapping):
            if part not in value:
                return False, None
            value = value[part]
        elif isinstance(value, list | tuple) and part.isascii() and part.isdigit():
            index = int(part)
            if index >= len(value):
                return False, None
            value = value[index]
        else:
            return False, None
    return True, value
