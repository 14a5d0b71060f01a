"""Hypothesis strategies for hostile input: wrong types, odd keys, huge and broken strings."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

# Strings that break things: NUL, lone surrogates (not valid Unicode), bidi overrides, markup.
NASTY_STRINGS = [
    "",
    " ",
    "\x00",
    "nul\x00inside",
    "\ud800",
    "a\udfffb",
    "\ud83d",
    "\u202eevil",
    "\ufeff",
    "\uffff",
    "😀",
    "é",
    "<script>alert(1)</script>",
    "\"><img src=x onerror=alert(1)>",
    "${a} or ${b}",
    "{{x.y}}",
    "{name}",
    "../../etc/passwd",
    "NEXT",
    "Generator",
    "InterviewAgent",
    "context_aware",
    "%s%n%x",
    "1e999",
    "\r\n\t",
]
BIG_INTEGERS = [2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 2**70, 10**400]


def _lone(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


HUGE_LENGTHS = [65, 201, 1_001, 2_001, 100_001, 300_000]

nasty_text = st.sampled_from(NASTY_STRINGS)
huge_text = st.sampled_from(HUGE_LENGTHS).map(lambda n: "x" * n)
any_text = st.text(max_size=20) | nasty_text | huge_text
keys = st.text(max_size=12) | nasty_text
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | st.sampled_from(BIG_INTEGERS)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text
)


def nested(depth: int, leaf: Any = 1) -> Any:
    """A value nested ``depth`` levels deep, alternating lists and objects."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


deep_values = st.integers(2, 300).map(nested)
hostile_json = st.recursive(
    scalars | deep_values,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)


# -- context_variables.json --------------------------------------------------------------------
def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*path, index))


def _parent(document: Any, path: tuple) -> Any:
    for part in path[:-1]:
        document = document[part]
    return document


@st.composite
def mangled_document(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """A valid document with 1-4 structure-aware mutations: replace, delete, add, duplicate."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_paths(document))
        path = draw(st.sampled_from(paths))
        operation = draw(st.sampled_from(["replace", "replace", "delete", "add", "duplicate"]))
        if not path:  # the root
            if operation == "replace":
                document = draw(hostile_json)
            elif operation == "add" and isinstance(document, dict):
                document[draw(keys)] = draw(hostile_json)
            continue
        parent, last = _parent(document, path), path[-1]
        if operation == "replace":
            parent[last] = draw(hostile_json)
        elif operation == "delete":
            del parent[last]
        elif operation == "add" and isinstance(parent[last], dict):
            parent[last][draw(keys)] = draw(hostile_json)
        elif operation == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
    return document


STRUCTURAL_KEYS = {"name", "type", "env_var", "condition", "database_name"}
printable_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=60
) | st.sampled_from([s for s in NASTY_STRINGS if s and "\x00" not in s and not _lone(s)])


@st.composite
def hostile_but_valid(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """A valid document whose free-text fields hold markup, bidi overrides, emoji and the like."""
    document = copy.deepcopy(base)
    paths = [
        path
        for path in _paths(document)
        if path
        and isinstance(path[-1], str)
        and path[-1] not in STRUCTURAL_KEYS
        and isinstance(_parent(document, path)[path[-1]], str)
    ]
    for path in draw(st.lists(st.sampled_from(paths), min_size=1, max_size=6)):
        _parent(document, path)[path[-1]] = draw(printable_text)
    return document


def deep_text(depth: int) -> str:
    """A document nested ``depth`` levels deep inside a variable list (too deep to recurse)."""
    return (
        '{"context_variables": {"declarative_variables": ['
        + "[" * depth
        + "]" * depth
        + "]}}"
    )


def _encodings(document: Any) -> st.SearchStrategy[Any]:
    """The same document as a mapping, JSON text or bytes in several (broken) encodings."""

    def dumps(ascii_only: bool) -> str:
        try:
            return json.dumps(document, ensure_ascii=ascii_only)
        except (ValueError, RecursionError):
            return "{"

    return st.sampled_from(
        [
            document,
            dumps(True),
            dumps(False),
            dumps(False).encode("utf-8", "surrogatepass"),
            dumps(False).encode("utf-16", "surrogatepass"),
            dumps(True).encode()[: max(1, len(dumps(True)) // 2)],
            b"\xef\xbb\xbf" + dumps(True).encode(),
        ]
    )


def config_inputs(base: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Hostile ``context_variables.json`` inputs: mangled documents in any encoding, and junk."""
    return (
        hostile_but_valid(base).flatmap(_encodings)
        | mangled_document(base).flatmap(_encodings)
        | hostile_json.flatmap(_encodings)
        | st.sampled_from([10, 1_000, 100_000]).map(deep_text)
        | st.binary(max_size=64)
        | st.sampled_from([b"\xff\xfe\xfd", b"\xed\xa0\x80", b'{"a": "\xc3"}', b"", b"null"])
    )


def as_bytes(data: Any) -> bytes:
    """Bytes for a file upload or a command's input (surrogates kept as their CESU bytes)."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    try:
        return json.dumps(data).encode()
    except (ValueError, RecursionError):
        return b"{"


# -- API bodies and events ---------------------------------------------------------------------
EVENT_FIELDS = ["type", "seq", "agent", "sender", "text", "tool", "status", "data", "name", "value"]
VALID_EVENTS = [
    {"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"},
    {"type": "agent_text", "agent": "WriterAgent", "text": "hello"},
    {"type": "tool_response", "tool": "search", "status": "success", "data": {"n": 1}},
    {"type": "context_set", "name": "concept_overview", "value": "gold"},
    {"type": "run_status", "status": "paused"},
    {"type": "run_status", "status": "running"},
]


@st.composite
def hostile_event(draw: st.DrawFn) -> Any:
    """A valid event with a field replaced, removed or added, or a made-up object."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(hostile_json)
    if kind == 1:
        fields = draw(st.lists(st.sampled_from(EVENT_FIELDS), max_size=5, unique=True))
        return {name: draw(hostile_json) for name in fields}
    event = dict(draw(st.sampled_from(VALID_EVENTS)))
    field = draw(st.sampled_from([*EVENT_FIELDS, "extra"]))
    if kind == 2:
        event[field] = draw(hostile_json | st.builds(lambda t: {"name": t}, any_text))
    else:
        event.pop(field, None)
    return event


def json_body(value: Any) -> bytes:
    """Serialize like a sloppy client would (NaN and Infinity allowed, surrogates kept)."""
    try:
        return json.dumps(value).encode()
    except (ValueError, RecursionError):
        return b"{"


def body_bytes(objects: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """Request bodies: objects as JSON, or raw bytes that are not."""
    return objects.map(json_body) | st.binary(max_size=40) | st.sampled_from(
        [b"", b"{", b"[]", b"null", b'"\\ud800"', b'{"a": "\\u0000"}', b"[" * 5000, b"1e999"]
    )


query_values = (
    st.text(max_size=30)
    | nasty_text
    | st.sampled_from(["-1", "0", "1", "999999999999999999", "9" * 40, "1.5", "0x10", "%ff", "%00"])
    | huge_text
)
