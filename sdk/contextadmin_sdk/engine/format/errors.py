"""What a broken ``context_variables.json`` raises: issues located by their JSON path."""

from __future__ import annotations

from dataclasses import dataclass, field

from .models import ContextVariablesFile


@dataclass(frozen=True)
class ConfigIssue:
    """One problem, located by its path in the JSON document."""

    loc: tuple[str | int, ...]
    message: str

    @property
    def path(self) -> str:
        return format_loc(self.loc)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.loc else self.message


class ConfigError(ValueError):
    """A ``context_variables.json`` that breaks the format; ``issues`` say where and why."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = issues
        super().__init__("; ".join(str(issue) for issue in issues))


@dataclass
class ParsedConfig:
    config: ContextVariablesFile
    warnings: list[str] = field(default_factory=list)


def format_loc(loc: tuple[str | int, ...]) -> str:
    """Render ('a', 0, 'b') as ``a[0].b``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out

