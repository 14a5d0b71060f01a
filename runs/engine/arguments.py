"""Type checks at the engine's public entry points: out-of-contract arguments fail clearly.

A ``None`` or an int where a signature says ``str`` or ``Mapping`` is a caller's bug, not bad
data: it raises ``TypeError`` naming the parameter, instead of an ``AttributeError`` from deep
inside (``'NoneType' object has no attribute 'find'``). Bad *data* of the right type (an
invalid config, a malformed event, an unknown variable) keeps its own ``ValueError``s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from .format import ContextVariablesFile, ParsedConfig

__all__ = ["require_config", "require_iterable", "require_mapping", "require_str"]


def _refuse(parameter: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"{parameter}: must be {expected}, not {type(value).__name__}")


def require_str(parameter: str, value: Any) -> None:
    """Raise ``TypeError`` naming ``parameter`` unless ``value`` is a ``str``."""
    if not isinstance(value, str):
        raise _refuse(parameter, "a str", value)


def require_mapping(parameter: str, value: Any, *, mutable: bool = False) -> None:
    """Raise ``TypeError`` naming ``parameter`` unless ``value`` is a (mutable) mapping."""
    if not isinstance(value, MutableMapping if mutable else Mapping):
        raise _refuse(parameter, "a mutable mapping" if mutable else "a mapping", value)


def require_iterable(parameter: str, value: Any) -> None:
    """Raise ``TypeError`` naming ``parameter`` unless ``value`` is iterable (not a str)."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise _refuse(parameter, "an iterable", value)


def require_config(parameter: str, value: Any) -> None:
    """Raise ``TypeError`` unless ``value`` is a form a config comes in (``ConfigInput``):
    a parsed config, a mapping, or JSON text or bytes."""
    if not isinstance(value, ContextVariablesFile | ParsedConfig | Mapping | str | bytes):
        raise _refuse(
            parameter, "a config (a mapping, JSON text or bytes, or a parsed config)", value
        )
