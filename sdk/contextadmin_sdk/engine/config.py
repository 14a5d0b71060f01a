"""Accept a config in any of the forms callers hold and parse it with the one parser (format)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from .arguments import require_config
from .format import (
    ConfigError,
    ContextVariablesFile,
    ParsedConfig,
    config_problems,
    parse_config,
)

__all__ = ["ConfigInput", "load_config"]

ConfigInput: TypeAlias = ContextVariablesFile | ParsedConfig | Mapping[str, Any] | bytes | str


def load_config(config: ConfigInput) -> ParsedConfig:
    """Return the parsed config, or raise ``ConfigError`` whose issues name JSON paths.

    An already-built ``ContextVariablesFile`` is re-checked for the cross-variable rules, since
    a caller may have assembled it piecemeal.
    """
    if isinstance(config, ParsedConfig):
        return config
    require_config("config", config)
    if isinstance(config, ContextVariablesFile):
        problems = config_problems(config)
        if problems:
            raise ConfigError(problems)
        return ParsedConfig(config)
    return parse_config(config)
