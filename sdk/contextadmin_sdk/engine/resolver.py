"""Templates: ``{{ref}}`` references (seed 002) and AG2-style ``{name}`` system messages.

Seed 002's algorithm, for each ``{{reference}}``: split by the first "."; a global variable wins
over a node of the same name; ``{{node}}`` is the node's whole output as JSON; a path drills in
(list indices allowed); anything not found stays as written and is listed in ``unresolved``.
Rendering: strings verbatim, every other value as compact JSON (``true``, ``25``, ``{"a":1}``).

Seed 004's namespaces: given ``namespaces`` (a run's ``{"agent": {...}, "world": {...}}``;
``RunState.resolve`` passes its own), ``{{agent.…}}`` and ``{{world.…}}`` read them, before any
variable or node (no variable, agent or tool may take those names: ``format``). Without
``namespaces`` they resolve as before.

Hostile input costs linear time and never overflows the stack: references are found by a
scanner (no backtracking pattern), a value nested deeper than ``JSON_MAX_DEPTH`` is never
rendered (the reference stays unresolved), and ``resolve_json`` refuses a deeper tree with
``TemplateError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .arguments import require_mapping, require_str
from .config import ConfigInput, load_config
from .format import (
    BASE_FLAGS,
    JSON_MAX_DEPTH,
    OUTPUT_NAMESPACES,
    RESERVED_NAMES,
    STATE_PATH_MAX_KEYS,
    json_nesting_exceeds,
)
from .paths import drill

# A mapping from names to values: a run's variables, node outputs or namespaces.
Values = Mapping[str, Any]

__all__ = [
    "LintIssue",
    "Resolution",
    "TemplateError",
    "lint_templates",
    "resolve",
    "resolve_json",
    "resolve_system_message",
    "template_references",
]

_BRACE = re.compile(r"[{}]")
_SYSTEM_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_SYSTEM_FIELD = re.compile(r"([A-Za-z_]\w*)(![rsa])?(:[^{}]*)?")
FORMAT_WIDTH_MAX = 1_000  # a wider ``:spec`` (``{x:>99999999}``) is left as written


def _oversized_spec(spec: str) -> bool:
    """Tell whether a format spec asks for a width or precision beyond FORMAT_WIDTH_MAX."""
    return any(
        len(digits) > 4 or int(digits) > FORMAT_WIDTH_MAX for digits in re.findall(r"\d+", spec)
    )


class TemplateError(ValueError):
    """A template the resolver refuses: a JSON tree nested deeper than ``JSON_MAX_DEPTH``."""


@dataclass(frozen=True)
class Resolution:
    """A resolved template (``value``; ``text`` for string templates) and what stayed unresolved."""

    value: Any
    unresolved: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The resolved text (non-string values of ``resolve_json`` as compact JSON)."""
        if isinstance(self.value, str):
            return self.value
        rendered = _render_json(self.value)
        return rendered if rendered is not None else f"<{type(self.value).__name__}>"


def _render_json(value: Any) -> str | None:
    """Compact JSON, or None for a value too deep (or too big a number) to render safely."""
    if isinstance(value, Mapping | list | tuple) and json_nesting_exceeds(value, JSON_MAX_DEPTH):
        return None
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (ValueError, TypeError):  # an int beyond the int-to-str digit limit, odd keys
        return None


def _render(value: Any) -> str | None:
    return value if isinstance(value, str) else _render_json(value)


def _lookup(
    reference: str,
    variables: Values,
    node_outputs: Values,
    namespaces: Values | None = None,
) -> str | None:
    """The rendered value of a reference (seed 004's namespaces when given, then seed 002:
    globals first, then nodes), or None."""
    name, *path = reference.split(".")
    if namespaces is not None and name in OUTPUT_NAMESPACES:
        found, value = drill(namespaces.get(name) or {}, path)
        return (_render(value) if path else _render_json(value)) if found else None
    if name in variables:
        found, value = drill(variables[name], path)
        return _render(value) if found else None
    if name in node_outputs:
        if not path:
            return _render_json(node_outputs[name])
        found, value = drill(node_outputs[name], path)
        return _render(value) if found else None
    return None


def _scan(template: str) -> Iterator[tuple[int, int, str]]:
    r"""Yield (start, end, reference) for every ``{{reference}}``, left to right, in linear time.

    A reference is ``{{``, then at least one character that is not a brace, then ``}}`` (the
    same matches as ``\{\{\s*([^{}]+?)\s*\}\}``, whose backtracking cost cubic time on
    ``"{{" + " " * 4000 + "}"``), stripped of surrounding whitespace. Each candidate looks only
    as far as the next brace, so no character is examined more than a few times.
    """
    position = 0
    while True:
        start = template.find("{{", position)
        if start < 0:
            return
        body = start + 2
        brace = _BRACE.search(template, body)
        if brace is None:
            return  # no brace after this one: nothing can close any reference
        end = brace.start()
        if end > body and template.startswith("}}", end):
            yield start, end + 2, template[body:end].strip()
            position = end + 2
        else:
            position = start + 1


def _resolve_into(
    template: str,
    variables: Values,
    node_outputs: Values,
    unresolved: dict[str, None],
    namespaces: Values | None = None,
) -> str:
    pieces: list[str] = []
    done = 0
    for start, end, reference in _scan(template):
        text = _lookup(reference, variables, node_outputs, namespaces)
        if text is None:
            unresolved[reference] = None
            continue
        pieces.append(template[done:start])
        pieces.append(text)
        done = end
    if not pieces:
        return template
    pieces.append(template[done:])
    return "".join(pieces)


def _require_sources(variables: Any, node_outputs: Any, namespaces: Any) -> None:
    """What a template reads from must be mappings (``TypeError`` naming the argument)."""
    require_mapping("variables", variables)
    require_mapping("node_outputs", node_outputs)
    if namespaces is not None:
        require_mapping("namespaces", namespaces)


def resolve(
    template: str, *, variables: Values, node_outputs: Values, namespaces: Values | None = None
) -> Resolution:
    """Resolve every ``{{reference}}`` in a string (seed 002 "Resolution Algorithm"); with a
    run's ``namespaces``, ``{{agent.…}}`` and ``{{world.…}}`` too (seed 004)."""
    require_str("template", template)
    _require_sources(variables, node_outputs, namespaces)
    unresolved: dict[str, None] = {}  # ordered set: first appearance, no repeats
    text = _resolve_into(template, variables, node_outputs, unresolved, namespaces)
    return Resolution(text, list(unresolved))


def resolve_json(
    obj: Any, *, variables: Values, node_outputs: Values, namespaces: Values | None = None
) -> Resolution:
    """Resolve every string inside a JSON tree (tool bodies, headers); keys stay as they are.

    Raises ``TemplateError`` for a tree nested deeper than ``JSON_MAX_DEPTH`` (checked first,
    without recursion), so legal but hostile JSON never overflows the stack.
    """
    _require_sources(variables, node_outputs, namespaces)
    if json_nesting_exceeds(obj, JSON_MAX_DEPTH):
        raise TemplateError(f"template: nested more than {JSON_MAX_DEPTH} levels")
    unresolved: dict[str, None] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _resolve_into(value, variables, node_outputs, unresolved, namespaces)
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
    require_str("template", template)
    require_mapping("variables", variables)
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
            and not json_nesting_exceeds(variables[parsed.group(1)], JSON_MAX_DEPTH)
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
    """Yield every ``{{reference}}`` in a string or JSON tree, in order (iterative: any depth)."""
    stack: list[Any] = [template]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            for _, _, reference in _scan(item):
                if reference:
                    yield reference
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))


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
    """List every reference no declared variable, base name, known node or output mapping can
    satisfy (``{{agent.x.y}}`` needs a mapping writing ``agent.x.y``, a path above it, or below).

    ``templates`` maps a location (``"InterviewAgent.prompt"``) to a string or JSON template,
    or is a plain list of them (locations ``[0]``, ``[1]``...).
    """
    if not isinstance(templates, str | Mapping | Iterable):
        raise TypeError(
            f"templates: must be a mapping, a list or a str, not {type(templates).__name__}"
        )
    parsed = load_config(config).config
    known = set(parsed.categories()) | RESERVED_NAMES | set(BASE_FLAGS)
    written = {output.to for output in parsed.outputs}
    above_written = {  # every path with a mapped path below it (agent, agent.intermediate...)
        ".".join(parts[:n])
        for parts in (to.split(".") for to in written)
        for n in range(1, len(parts))
    }
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
            if reference in seen:
                continue
            if name in OUTPUT_NAMESPACES:
                mapped = _mapped(reference, written, above_written)
                problem = None if mapped else f"no output mapping writes {reference}"
            elif name in known or name in node_names:
                problem = None
            else:
                problem = f"no variable or node named {name}"
            if problem is not None:
                seen.add(reference)
                issues.append(
                    LintIssue(str(location), reference, f"{{{{{reference}}}}}: {problem}")
                )
    return issues


def _mapped(reference: str, written: set[str], above_written: set[str]) -> bool:
    """Whether an output mapping writes ``reference``, a path above it, or a path below it."""
    if reference in above_written:
        return True
    parts = reference.split(".", STATE_PATH_MAX_KEYS + 1)  # no mapped path is longer
    return any(".".join(parts[:n]) in written for n in range(2, len(parts) + 1))
