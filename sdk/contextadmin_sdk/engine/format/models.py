"""The pydantic models of ``context_variables.json``: one per shape of the file, each checking
its own fields (cross-field rules are in ``checks``)."""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from .handoff_conditions import MAX_CONDITION_LENGTH
from .limits import (
    CATEGORIES,
    CATEGORY_KEYS,
    DECLARATIVE_VALUE_MAX_CHARS,
    DESCRIPTION_MAX_CHARS,
    DIGEST_REGEX,
    ENV_VAR_PATTERN,
    IDENTIFIER_MAX_CHARS,
    INT64_MAX,
    INT64_MESSAGE,
    INT64_MIN,
    MATCH_TEXT_MAX_CHARS,
    MAX_HANDOFFS,
    MAX_OUTPUTS,
    MAX_TRIGGERS_PER_VARIABLE,
    NAME_MAX_CHARS,
    NAME_PATTERN,
    OUTPUT_NAMESPACES,
    SECRET_ENV_REASON,
    STATE_NAMESPACES,
    STATE_PATH_MAX_CHARS,
    STATE_PATH_MAX_KEYS,
)
from .values import (
    credential_value_reason,
    env_var_problem,
    json_type_name,
    type_of_value,
    value_matches_type,
    with_article,
)

VarType = Literal["string", "integer", "number", "boolean"]
# Values are checked by ``_primitive_of_type`` (one clear message instead of four union errors).
Primitive = Annotated[
    Any, WithJsonSchema({"type": ["string", "integer", "number", "boolean"]})
]

def _not_a_keyword(name: str) -> str:
    if keyword.iskeyword(name):
        raise ValueError(f"{name} is a Python keyword: AG2's ContextExpression cannot reference it")
    return name


Name = Annotated[  # the constraints first: after a validator they read as a list's ("items")
    str,
    Field(
        min_length=1,
        max_length=NAME_MAX_CHARS,
        pattern=NAME_PATTERN,
        description="lower_snake_case, unique across the four categories of a workflow",
    ),
    AfterValidator(_not_a_keyword),
]
Identifier = Annotated[str, Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS)]
Description = Annotated[str, Field(max_length=DESCRIPTION_MAX_CHARS)]


def _primitive_of_type(value: Any, info: ValidationInfo) -> Any:
    """Check a declared value against the sibling ``type`` field, naming both."""
    type_ = info.data.get("type")
    if type_ is None:  # the type itself was invalid: that error is reported already
        return value
    if not value_matches_type(value, type_):
        raise ValueError(
            f"must be {with_article(type_)} (the declared type), got {json_type_name(value)}"
        )
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(INT64_MESSAGE)
    return value


def _not_a_credential(value: Any) -> Any:
    """Refuse a shipped value (declarative, env default) that looks like a credential."""
    reason = credential_value_reason(value)
    if reason:
        raise ValueError(f"{reason}: {SECRET_ENV_REASON.removeprefix('looks like a secret: ')}")
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, frozen=True)


# -- variables --------------------------------------------------------------------------------
class DeclarativeVariable(_Model):
    """A static constant shipped with the workflow (seed 000 "declarative_variables")."""

    name: Name
    type: VarType = "string"
    description: Description = ""
    value: Primitive

    @model_validator(mode="before")
    @classmethod
    def _infer_type(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "type" not in data and "value" in data:
            return {**data, "type": type_of_value(data["value"])}
        return data

    @field_validator("value")
    @classmethod
    def _value_fits(cls, value: Any, info: ValidationInfo) -> Any:
        value = _primitive_of_type(value, info)
        if isinstance(value, str) and len(value) > DECLARATIVE_VALUE_MAX_CHARS:
            raise ValueError(
                f"is {len(value)} characters; declarative values must stay small "
                f"(at most {DECLARATIVE_VALUE_MAX_CHARS}): summarize instead"
            )
        return _not_a_credential(value)


class DatabaseSource(_Model):
    """Where a database variable is read from; ``database_name`` overrides the workflow's."""

    type: Literal["database"] = "database"
    database_name: Identifier | None = None
    collection: Identifier
    search_by: Identifier
    field: Identifier


class DatabaseVariable(_Model):
    """A value looked up in MongoDB by the run's enterprise (seed 000 "database_variables")."""

    name: Name
    type: VarType = "string"
    description: Description = ""
    source: DatabaseSource


class EnvironmentSource(_Model):
    type: Literal["environment"] = "environment"
    env_var: Annotated[
        str, Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS, pattern=ENV_VAR_PATTERN)
    ]

    @field_validator("env_var")
    @classmethod
    def _not_a_secret(cls, value: str) -> str:
        problem = env_var_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class EnvironmentVariable(_Model):
    """A deployment feature flag read from the OS environment, suppressed in production."""

    name: Name
    type: VarType = "string"
    description: Description = ""
    source: EnvironmentSource
    default: Primitive | None = None

    @field_validator("default")
    @classmethod
    def _default_fits(cls, value: Any, info: ValidationInfo) -> Any:
        return None if value is None else _not_a_credential(_primitive_of_type(value, info))


class TextMatch(_Model):
    equals: Annotated[str, Field(min_length=1, max_length=MATCH_TEXT_MAX_CHARS)]
    case_sensitive: StrictBool = False
    trim: StrictBool = True

    @model_validator(mode="after")
    def _can_match(self) -> TextMatch:
        # A turn's text is reported only when it has some: text trimming leaves empty never
        # matches, so the flag could never flip.
        if self.trim and not self.equals.strip():
            raise ValueError(
                "equals: only whitespace, which trim removes: it could never match a turn's text"
            )
        return self


class AgentTextTrigger(_Model):
    """True once ``agent`` emits text equal to ``match.equals`` (trimmed, any case by default)."""

    type: Literal["agent_text"] = "agent_text"
    agent: Identifier
    match: TextMatch


class AgentTurnCountTrigger(_Model):
    """True once ``agent`` has emitted ``count`` messages."""

    type: Literal["agent_turn_count"] = "agent_turn_count"
    agent: Identifier
    count: Annotated[StrictInt, Field(ge=1, le=1_000_000)]


class ToolResponseTrigger(_Model):
    """True once ``tool`` responds (with ``status``, when given)."""

    type: Literal["tool_response"] = "tool_response"
    tool: Identifier
    status: Identifier | None = None


Trigger = Annotated[
    AgentTextTrigger | AgentTurnCountTrigger | ToolResponseTrigger, Field(discriminator="type")
]
TRIGGER_TYPES: tuple[str, ...] = ("agent_text", "agent_turn_count", "tool_response")


class DerivedVariable(_Model):
    """A boolean flag flipped by run events; any trigger flips it, all predicates must hold."""

    name: Name
    type: Literal["boolean"] = "boolean"
    description: Description = ""
    default: StrictBool = False
    triggers: Annotated[list[Trigger], Field(max_length=MAX_TRIGGERS_PER_VARIABLE)] = []


class Handoff(_Model):
    """A conditional hand-off between two agents; ``condition`` follows docs/format.md."""

    source_agent: Identifier
    target_agent: Identifier
    condition: Annotated[str, Field(min_length=1, max_length=MAX_CONDITION_LENGTH)]
    description: Description = ""


# -- seed 004's output mappings ----------------------------------------------------------------
_STATE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
STATE_PATH_PATTERN = (
    rf"^(?:{'|'.join(OUTPUT_NAMESPACES)})(?:\.[A-Za-z_][A-Za-z0-9_]*){{1,{STATE_PATH_MAX_KEYS}}}$"
)


def state_path_problem(path: Any) -> str | None:
    """Say why an output mapping may not write ``path`` (None when it may), variables aside.

    A target is ``agent.key[.key...]`` or ``world.key[.key...]``: seed 004's namespaces a
    workflow writes (``context``, ``nodes`` and ``execution`` the run writes itself); keys are
    letters, digits and ``_``, not starting with a digit (never a list index).
    """
    if not isinstance(path, str):
        return "must be a path like agent.intermediate.keywords"
    if len(path) > STATE_PATH_MAX_CHARS:
        return f"at most {STATE_PATH_MAX_CHARS} characters"
    head, _, rest = path.partition(".")
    writable = " or ".join(f"{name}.…" for name in OUTPUT_NAMESPACES)
    if head not in OUTPUT_NAMESPACES:
        if head in STATE_NAMESPACES:
            return f"{head} is a namespace the run writes itself: a mapping writes {writable}"
        return f"{path[:40]!r} is not in a namespace a mapping writes: use {writable}"
    keys = rest.split(".") if rest else []
    if not keys:
        return f"name a key inside {head}: {head}.key[.key...]"
    if len(keys) > STATE_PATH_MAX_KEYS:
        return f"at most {STATE_PATH_MAX_KEYS} keys after {head}"
    for key in keys:
        if not _STATE_KEY.fullmatch(key):
            return (
                f"{key[:40]!r} is not a key: letters, digits and _, not starting with a digit"
            )
    return None


def _trimmed(value: str) -> str:
    if value != value.strip():
        raise ValueError("no spaces before or after the name")
    return value


class OutputMapping(_Model):
    """Seed 004's ``from_llm`` for a tool: ``data[field]`` of its response is written to ``to``."""

    tool: Annotated[
        Identifier, AfterValidator(_trimmed), Field(description="the tool whose response is read")
    ]
    field: Annotated[
        Identifier, AfterValidator(_trimmed), Field(description="the key of the response's data")
    ]
    to: Annotated[
        str,
        Field(
            min_length=1,
            max_length=STATE_PATH_MAX_CHARS,
            json_schema_extra={"pattern": STATE_PATH_PATTERN},
            description="agent.key[.key...] or world.key[.key...]: where the value is written",
        ),
    ]


class ExportVersion(_Model):
    """The version an export was taken from, written by the server's export (docs/format.md).

    The loader ignores it; a runtime sends it at run start so the run is pinned to what it ran
    with. ``digest`` is ``export_digest`` of the export without this key.
    """

    number: Annotated[StrictInt, Field(ge=1, le=2**31 - 1)] | None = None
    digest: Annotated[str, Field(pattern=DIGEST_REGEX)]


# -- the file ---------------------------------------------------------------------------------
class ContextVariables(_Model):
    database_name: Identifier | None = None
    declarative_variables: list[DeclarativeVariable] = []
    database_variables: list[DatabaseVariable] = []
    environment_variables: list[EnvironmentVariable] = []
    derived_variables: list[DerivedVariable] = []


AnyVariable = DeclarativeVariable | DatabaseVariable | EnvironmentVariable | DerivedVariable


class ContextVariablesFile(_Model):
    """A whole ``context_variables.json``."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "/schema/context_variables.schema.json",
            "title": "context_variables.json",
        },
    )

    context_variables: ContextVariables = ContextVariables()
    handoffs: Annotated[list[Handoff], Field(max_length=MAX_HANDOFFS)] = []
    outputs: Annotated[list[OutputMapping], Field(max_length=MAX_OUTPUTS)] = []
    version: ExportVersion | None = None  # metadata of an export: never part of the definitions

    def variables(self) -> Iterator[tuple[str, int, AnyVariable]]:
        """Yield (category, index, variable) in canonical order."""
        for category in CATEGORIES:
            variables = getattr(self.context_variables, CATEGORY_KEYS[category])
            for index, variable in enumerate(variables):
                yield category, index, variable

    def categories(self) -> dict[str, str]:
        """Map variable name -> category."""
        return {variable.name: category for category, _, variable in self.variables()}

    def agent_names(self) -> set[str]:
        """Agents named by triggers and hand-offs."""
        agents: set[str] = set()
        for derived in self.context_variables.derived_variables:
            for trigger in derived.triggers:
                agent = getattr(trigger, "agent", None)
                if agent:
                    agents.add(agent)
        for handoff in self.handoffs:
            agents.update((handoff.source_agent, handoff.target_agent))
        return agents

    def tool_names(self) -> set[str]:
        """Tools named by triggers and output mappings (seed 002: tools are nodes too)."""
        tools: set[str] = {output.tool for output in self.outputs}
        for derived in self.context_variables.derived_variables:
            for trigger in derived.triggers:
                tool = getattr(trigger, "tool", None)
                if tool:
                    tools.add(tool)
        return tools

    def node_names(self) -> dict[str, str]:
        """Map every node the workflow names (agents and tools) -> ``agent`` or ``tool``."""
        nodes = dict.fromkeys(sorted(self.tool_names()), "tool")
        nodes.update(dict.fromkeys(sorted(self.agent_names()), "agent"))
        return nodes

