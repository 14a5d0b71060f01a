"""Templates: ``{{ref}}`` references (seed 002) and AG2-style ``{name}`` system messages.

Seed 002's algorithm, for each ``{{reference}}``: split by the first "."; a global variable wins
over a node of the same name; ``{{node}}`` is the node's whole output as JSON; a path drills in
(list indices allowed); anything not found stays as written and is listed in ``unresolved``.
Rendering: strings verbatim, every other value as compact JSON (``true``, ``25``, ``{"a":1}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .config import ConfigInput, load_config
from .format import RESERVED_NAMES
from .loader import BASE_FLAGS
from .paths import drill

__all__ = [
    "LintIssue",
    "Resolution",
    "lint_templates",
    "resolve",
    "resolve_json",
    "resolve_system_message",
    "template_references",
]

_REFERENCE = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
_SYSTEM_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_SYSTEM_FIELD = re.compile(r"([A-Za-z_]\w*)(![rsa])?(:[^{}]*)?")
FORMAT_WIDTH_MAX = 1_000  # a wider ``:spec`` (``{x:>99999999}``) is left as written


def _oversized_spec(spec: str) -> bool:
    """Tell whether a format spec asks for a width or precision beyond FORMAT_WIDTH_MAX."""
    return any(
        len(digits) > 4 or int(digits) > FORMAT_WIDTH_MAX for digits in re.findall(r"\d+", spec)
    )


@dataclass(frozen=True)
class Resolution:
    """A resolved template (``value``; ``text`` for string templates) and what stayed unresolved."""

    value: Any
    unresolved: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The resolved text (non-string values of ``resolve_json`` as compact JSON)."""
        return self.value if isinstance(self.value, str) else _render_json(self.value)


def _render_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _render(value: Any) -> str:
    return value if isinstance(value, str) else _render_json(value)


def _lookup(
    reference: str, variables: Mapping[str, Any], node_outputs: Mapping[str, Any]
) -> tuple[bool, str]:
    name, *path = reference.split(".")
    if name in variables:
        found, value = drill(variables[name], path)
        return found, _render(value) if found else ""
    if name in node_outputs:
        if not path:
            return True, _render_json(node_outputs[name])
        found, value = drill(node_outputs[name], path)
        return found, _render(value) if found else ""
    return False, ""


def _resolve_into(
    template: str,
    variables: Mapping[str, Any],
    node_outputs: Mapping[str, Any],
    unresolved: dict[str, None],
) -> str:
    def substitute(match: re.Match[str]) -> str:
        reference = match.group(1).strip()
        found, text = _lookup(reference, variables, node_outputs)
        if found:
            return text
        unresolved[reference] = None
        return match.group(0)

    return _REFERENCE.sub(substitute, template)


def resolve(
    template: str, *, variables: Mapping[str, Any], node_outputs: Mapping[str, Any]
) -> Resolution:
    """Resolve every ``{{reference}}`` in a string (seed 002 "Resolution Algorithm")."""
    unresolved: dict[str, None] = {}  # ordered set: first appearance, no repeats
    text = _resolve_into(template, variables, node_outputs, unresolved)
    return Resolution(text, list(unresolved))


def resolve_json(
    obj: Any, *, variables: Mapping[str, Any], node_outputs: Mapping[str, Any]
) -> Resolution:
    """Resolve every string inside a JSON tree (tool bodies, headers); keys stay as they are."""
    unresolved: dict[str, None] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _resolve_into(value, variables, node_outputs, unresolved)
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        if isinstance(value, Mapping):
            return {key: walk(item) for key, item in value.items()}
        return value

    return Resolution(walk(obj), list(unresolved))


def resolve_system_message(template: str, variables: Mapping[str, Any]) -> Resolution:
    """Fill an AG2 ``UpdateSystemMessage`` template (``str.format`` rules: ``{{`` is ``{``).

    Only plain names (with optional ``!r``/``:spec``) are filled, as ``str.format`` would render
    them; unknown names and anything else stay as written and are listed.
    """
    unresolved: dict[str, None] = {}

    def substitute(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        spec = match.group(1)
        parsed = _SYSTEM_FIELD.fullmatch(spec)
        if (
            parsed is not None
            and parsed.group(1) in variables
            and not _oversized_spec(parsed.group(3) or "")
        ):
            name = parsed.group(1)
            try:
                return token.format_map({name: variables[name]})
            except (ValueError, TypeError):
                pass  # a format spec that does not fit the value: leave it for a human
        if spec.strip():
            unresolved[spec] = None
        return token

    return Resolution(_SYSTEM_TOKEN.sub(substitute, template), list(unresolved))


def template_references(template: Any) -> Iterator[str]:
    """Yield every ``{{reference}}`` in a string or JSON tree, in order."""
    if isinstance(template, str):
        for match in _REFERENCE.finditer(template):
            reference = match.group(1).strip()
            if reference:
                yield reference
    elif isinstance(template, list | tuple):
        for item in template:
            yield from template_references(item)
    elif isinstance(template, Mapping):
        for item in template.values():
            yield from template_references(item)


@dataclass(frozen=True)
class LintIssue:
    """A ``{{reference}}`` that nothing can satisfy, and where it was found."""

    location: str
    reference: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


def lint_templates(
    templates: Mapping[str, Any] | Iterable[Any],
    config: ConfigInput,
    *,
    nodes: Iterable[str] = (),
) -> list[LintIssue]:
    """List every reference no declared variable, base name or known node can satisfy.

    ``templates`` maps a location (``"InterviewAgent.prompt"``) to a string or JSON template,
    or is a plain list of them (locations ``[0]``, ``[1]``...).
    """
    known = set(load_config(config).config.categories()) | RESERVED_NAMES | set(BASE_FLAGS)
    node_names = set(nodes)
    if isinstance(templates, str):
        items: Iterable[tuple[str, Any]] = [("template", templates)]
    elif isinstance(templates, Mapping):
        items = templates.items()
    else:
        items = ((f"[{index}]", template) for index, template in enumerate(templates))
    issues: list[LintIssue] = []
    for location, template in items:
        seen: set[str] = set()
        for reference in template_references(template):
            name = reference.split(".")[0]
            if name in known or name in node_names or reference in seen:
                continue
            seen.add(reference)
            issues.append(
                LintIssue(
                    str(location),
                    reference,
                    f"{{{{{reference}}}}}: no variable or node named {name}",
                )
            )
    return issues
