"""The ``context_variables.json`` format: the one definition of it (pydantic v2, no Django).

Seed 000 "Configuration Shape" plus docs/format.md. The admin's validation, the importer, the
exporter, the engine and the JSON Schema all come from here, so no rule is written twice.

Entry points:
- ``parse_config(data)`` -> ``ParsedConfig(config, warnings)`` or raises ``ConfigError`` whose
  ``issues`` name JSON paths (``context_variables.derived_variables[0].triggers[0].agent``);
- ``config_problems(config)`` -> the cross-variable rules (unique names, agent names, database
  names, hand-off conditions) as ``ConfigIssue`` objects, for callers that build a config
  piecemeal (the admin);
- ``config_export_bytes(config, production=...)`` -> the canonical, byte-stable export;
- ``json_schema()`` -> the draft 2020-12 JSON Schema.
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

__all__ = [
    "BASE_FLAGS",
    "CATEGORIES",
    "DECLARATIVE_VALUE_MAX_CHARS",
    "ENVIRONMENTS",
    "ENV_NUMBER_MAX_CHARS",
    "ENV_VALUE_MAX_CHARS",
    "EXCHANGES_MAX",
    "JSON_MAX_DEPTH",
    "MAX_CONDITION_LENGTH",
    "MAX_OUTPUTS",
    "NODE_DATA_MAX_BYTES",
    "NODE_TEXT_MAX_CHARS",
    "OUTPUT_NAMESPACES",
    "OUTPUT_VALUE_MAX_BYTES",
    "PATH_MAX_EDGES",
    "REDACTED_MARKER",
    "RESERVED_NAMES",
    "ROUTABLE_CATEGORIES",
    "RUN_ID_MAX_CHARS",
    "RUN_ID_PATTERN",
    "RUN_ID_REGEX",
    "RUN_ID_RULE",
    "SECRET_ENV_REASON",
    "SERVER_ENV_REASON",
    "SERVER_ENV_VARS",
    "STATE_MAX_NODES",
    "STATE_NAMESPACES",
    "STATE_PATH_MAX_CHARS",
    "STATE_PATH_MAX_KEYS",
    "AgentTextTrigger",
    "AgentTurnCountTrigger",
    "ConditionError",
    "ConfigError",
    "ConfigIssue",
    "ContextVariables",
    "ContextVariablesFile",
    "DatabaseSource",
    "DatabaseVariable",
    "DeclarativeVariable",
    "DerivedVariable",
    "EnvironmentSource",
    "EnvironmentVariable",
    "ExportVersion",
    "Handoff",
    "OutputMapping",
    "ParsedConfig",
    "TextMatch",
    "ToolResponseTrigger",
    "Trigger",
    "condition_names",
    "condition_problems",
    "config_digest",
    "config_export_bytes",
    "config_export_dict",
    "config_problems",
    "credential_value_reason",
    "env_var_problem",
    "export_digest",
    "export_with_version",
    "is_secret_env_var",
    "json_nesting_exceeds",
    "json_schema",
    "json_value_problem",
    "parse_config",
    "run_id_valid",
    "state_path_problem",
    "text_problem",
    "value_matches_type",
    "with_article",
]

# -- limits and vocabularies (documented in docs/format.md) ----------------------------------
NAME_MAX_CHARS = 64
DESCRIPTION_MAX_CHARS = 2_000
DECLARATIVE_VALUE_MAX_CHARS = 1_000  # seed 000: "keep values small (avoid large blobs)"
IDENTIFIER_MAX_CHARS = 200  # agent, tool, collection, field and database names
MATCH_TEXT_MAX_CHARS = 1_000
MAX_VARIABLES = 5_000  # over all four categories of one workflow
MAX_TRIGGERS_PER_VARIABLE = 100
MAX_HANDOFFS = 1_000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT64_MESSAGE = "must fit in a signed 64-bit integer (JSON consumers and databases cap it)"
ENTERPRISE_ID_MAX_CHARS = 200  # a run's enterprise id (runs.Run.enterprise_id holds as many)
# A run id (runs.Run.id holds 64): the one rule for every place that takes one (run start,
# import, the API's and the sockets' paths), checked before a run id reaches SQL, a log line
# or a channel-layer group name (whose names allow at most 100 ASCII characters).
RUN_ID_MAX_CHARS = 64
RUN_ID_REGEX = rf"[A-Za-z0-9_-]{{1,{RUN_ID_MAX_CHARS}}}"
RUN_ID_PATTERN = re.compile(rf"^{RUN_ID_REGEX}\Z")  # .match() is whole-string
RUN_ID_RULE = f"1-{RUN_ID_MAX_CHARS} characters of A-Z, a-z, 0-9, _ and -"
DIGEST_REGEX = r"^sha256:[0-9a-f]{64}$"  # an export's digest: "sha256:" and 64 hex digits


def run_id_valid(value: object) -> bool:
    """Whether ``value`` is a run id a run could have (``RUN_ID_RULE``)."""
    return isinstance(value, str) and RUN_ID_PATTERN.fullmatch(value) is not None

CATEGORIES: tuple[str, ...] = ("declarative", "database", "environment", "derived")
CATEGORY_KEYS: dict[str, str] = {c: f"{c}_variables" for c in CATEGORIES}
RESERVED_NAMES = frozenset({"enterprise_id", "workflow_name"})  # the minimal base context
LEGACY_KEYS = ("variables",)

ENVIRONMENTS: tuple[str, ...] = ("development", "production")
NAME_PATTERN = r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$"
ENV_VAR_PATTERN = r"^[A-Z_][A-Z0-9_]*$"
# The minimal base context's two baked-in flags (seed 000 step 1), and the env vars they read.
# Only an environment variable may take one of these names (docs/format.md).
BASE_FLAGS: dict[str, str] = {
    "context_aware": "CONTEXT_AWARE",
    "monetization_enabled": "MONETIZATION_ENABLED",
}
JSON_MAX_DEPTH = 64  # nesting of any JSON value the engine takes in (events, contexts, templates)
# A run's state budget (sdk/contextadmin_sdk/engine/state.py; docs/reliability.md "a run's state is
# bounded").
# The state is rewritten after every batch, so it holds previews, never blobs: the full text of
# every output stays in the event log (the node's "seq" says which event).
NODE_TEXT_MAX_CHARS = 1_000  # an agent's last text kept in nodes; longer: a preview this long
NODE_DATA_MAX_BYTES = 2_000  # a tool's last response (as JSON); larger: a preview this long
STATE_MAX_NODES = 500  # distinct agents and tools a run's state tracks (nodes, visited agents)
PATH_MAX_EDGES = 1_000  # hand-off edges kept in execution.path (the latest; each has its seq)
# Seed 004's namespaces of a run's state; an output mapping writes the last two (docs/format.md
# "outputs"), and no variable, agent or tool takes their names ({{agent.…}} reads the state).
STATE_NAMESPACES: tuple[str, ...] = ("context", "nodes", "execution", "agent", "world")
OUTPUT_NAMESPACES: tuple[str, ...] = ("agent", "world")
MAX_OUTPUTS = 200  # output mappings of one workflow (each writes one distinct path)
STATE_PATH_MAX_CHARS = 200  # an output mapping's target path, namespace included
STATE_PATH_MAX_KEYS = 16  # keys after the namespace
OUTPUT_VALUE_MAX_BYTES = 2_000  # a mapped value (as JSON) kept in the state; larger: not written
EXCHANGES_MAX = 200  # speaker pairs counted in execution.exchanges (the first ones; then no more)
ENV_VALUE_MAX_CHARS = 1_000  # seed 000: env vars are "small booleans or short scalars"
ENV_NUMBER_MAX_CHARS = 100  # an integer/number literal longer than this is not a flag value

# Every setting the server itself reads from the environment (contextadmin/settings.py and the
# management commands; a test keeps this list in step with settings.py). A context variable
# never reads one: they hold the server's credentials (DATABASE_URL, MONGODB_URI...) or tune it.
# The base flags CONTEXT_AWARE and MONETIZATION_ENABLED are the seed's own feature flags, not
# server settings, so they stay readable.
SERVER_ENV_VARS: frozenset[str] = frozenset({
    "API_MAX_BODY_BYTES",
    "API_MAX_EVENTS_PER_BATCH",
    "API_MAX_RUNNING_RUNS_PER_TOKEN",
    "API_MAX_SOCKETS_PER_TOKEN",
    "API_RATE_LIMIT_PER_MINUTE",
    "CHANNEL_LAYER_CAPACITY",
    "CHANNEL_LAYER_SWEEP_S",
    "CONTEXTADMIN_REVIEW",
    "CONTEXT_INCLUDE_SCHEMA",
    "CONTEXT_VERBOSE_DEBUG",
    "DATABASE_POOL",
    "DATABASE_POOL_MAX_IDLE_S",
    "DATABASE_POOL_MAX_SIZE",
    "DATABASE_POOL_MIN_SIZE",
    "DATABASE_POOL_TIMEOUT_S",
    "DATABASE_URL",
    "DJANGO_ALLOWED_HOSTS",
    "DJANGO_CSRF_TRUSTED_ORIGINS",
    "DJANGO_DEBUG",
    "DJANGO_HSTS_SECONDS",
    "DJANGO_LOG_LEVEL",
    "DJANGO_SECRET_KEY",
    "DJANGO_SECURE_SSL",
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_SUPERUSER_EMAIL",
    "DJANGO_SUPERUSER_PASSWORD",
    "DJANGO_SUPERUSER_USERNAME",
    "DJANGO_TEST_DATABASE",
    "ENVIRONMENT",
    "MONGODB_TIMEOUT_MS",
    "MONGODB_URI",
    "REDIS_CHANNEL_LAYER",
    "REDIS_URL",
    "RUNS_RETENTION_DAYS",
    "RUNS_STALE_AFTER_S",
    "WEBHOOKS_ALLOW_HTTP",
    "WEBHOOKS_ALLOW_PRIVATE",
    "WEBHOOKS_BACKOFF_BASE_S",
    "WEBHOOKS_CONNECT_TIMEOUT_S",
    "WEBHOOKS_DISABLE_AFTER_DAYS",
    "WEBHOOKS_READ_TIMEOUT_S",
    "WEBHOOKS_RETRY_FOR_S",
    "WEBHOOKS_SITE_URL",
    "WEBHOOKS_TICK_S",
})
# Credential-shaped env var names. Substrings for words that never occur by accident
# (SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL, PRIVATE); whole ``_``-separated words for short
# ones that do (PASS would refuse COMPASS, AUTH would refuse AUTHOR, KEY would refuse MONKEY).
_SECRET_ENV_SUBSTRINGS = re.compile(r"SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|PRIVATE")
_SECRET_ENV_WORDS = frozenset({
    "KEY", "KEYS", "APIKEY", "PASS", "PWD", "AUTH", "OAUTH", "AUTHORIZATION", "DSN", "CREDS",
    "PASSPHRASE", "COOKIE", "CERT", "PEM",
})
SECRET_ENV_REASON = (  # a message about secrets, not one
    "looks like a secret: storing secrets in any context variable is an anti-pattern "  # noqa: S105
    "(use a secure secret manager; never echo secret env vars here)"
)
SERVER_ENV_REASON = (
    "is a setting of this server (contextadmin/settings.py), which may hold its credentials: "
    "it never enters a context"
)

# What a credential-looking value is replaced by when read (loader, supplied contexts).
REDACTED_MARKER = "[redacted]"
# Each pattern is anchored on a literal and uses only bounded or separator-stopped repeats, so a
# scan is linear in the text whatever it holds.
_URL_AUTHORITY = re.compile(r"://([^\s/?#]*)")
_SECRET_QUERY = re.compile(
    r"[?&;](?:password|passwd|pwd|pass|secret|token|access_token|api_key|apikey|key|auth"
    r"|client_secret|sig|signature)=[^&\s]", re.IGNORECASE,
)
_CREDENTIAL_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z0-9 ]{0,64}-----"), "a PEM block"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36}"), "a GitHub token"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10}"), "a Slack token"),
    (re.compile(r"\bsk-(?:live-|proj-|ant-)?[A-Za-z0-9_-]{20}"), "an API secret key (sk-...)"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,200}\.eyJ[A-Za-z0-9_-]{8}"), "a JSON Web Token"),
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


Name = Annotated[
    str,
    AfterValidator(_not_a_keyword),
    Field(
        min_length=1,
        max_length=NAME_MAX_CHARS,
        pattern=NAME_PATTERN,
        description="lower_snake_case, unique across the four categories of a workflow",
    ),
]
Identifier = Annotated[str, Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS)]
Description = Annotated[str, Field(max_length=DESCRIPTION_MAX_CHARS)]


# -- hand-off conditions (seed 000 "Handoff Routing Constraints") ---------------------------
MAX_CONDITION_LENGTH = 500
ROUTABLE_CATEGORIES = frozenset({"environment", "derived"})

_NAME_BODY = NAME_PATTERN[1:-1]
_STRICT_CONDITION = re.compile(rf"\$\{{({_NAME_BODY})\}}(?: and \$\{{({_NAME_BODY})\}})?")
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_NEGATION = re.compile(r"(?:^|[\s(])(?:not)(?=[\s$(])|!", re.IGNORECASE)
_OR = re.compile(r"(?:^|\s)or(?=\s)|\|\|", re.IGNORECASE)
_COMPARISON = re.compile(r"==|!=|<=|>=|<|>|=")
_FUNCTION = re.compile(r"\b(?:len|any|all)\s*\(|\w+\s*\(")
_AND = re.compile(r"\band\b", re.IGNORECASE)


class ConditionError(ValueError):
    """A hand-off condition that breaks the grammar."""


def condition_names(expr: Any) -> tuple[str, ...]:
    """Return the variable names of a condition, or raise ConditionError saying why.

    Only the strict form is accepted: exactly ``${a}`` or ``${a} and ${b}`` (single spaces,
    lower-case ``and``, nothing inside ``${}`` but the name). That is the form AG2's own
    ``ContextExpression`` parses, so a condition valid here is valid there.
    """
    if not isinstance(expr, str):
        raise ConditionError("a condition must be a string like ${interview_complete}")
    if not expr.strip():
        raise ConditionError("a condition may not be empty")
    if len(expr) > MAX_CONDITION_LENGTH:
        raise ConditionError(f"a condition may be at most {MAX_CONDITION_LENGTH} characters")
    strict = _STRICT_CONDITION.fullmatch(expr)
    if strict is not None:
        names = tuple(name for name in strict.groups() if name is not None)
        for name in names:
            if keyword.iskeyword(name):
                raise ConditionError(f"{name} is a Python keyword, not a variable name")
        if len(names) == 2 and names[0] == names[1]:
            raise ConditionError(f"{names[0]} is referenced twice")
        return names
    outside = _REFERENCE.sub(" ", expr)
    if _NEGATION.search(outside):
        raise ConditionError('"not" is not allowed: conditions are positive')
    if _OR.search(outside):
        raise ConditionError('"or" is not allowed: conditions are conjunctive (at most one "and")')
    if _COMPARISON.search(outside):
        raise ConditionError(
            "comparisons are not allowed: reference boolean flags as ${name}, nothing else"
        )
    if _FUNCTION.search(outside):
        raise ConditionError("functions are not allowed: reference boolean flags as ${name}")
    if len(_AND.findall(outside)) > 1:
        raise ConditionError('at most one "and" is allowed: ${a} or ${a} and ${b}')
    for inner in _REFERENCE.findall(expr):
        if inner != inner.strip():
            raise ConditionError(f"no spaces inside ${{}}: write ${{{inner.strip()}}}")
        if not re.fullmatch(_NAME_BODY, inner):
            raise ConditionError(f"{inner!r} is not a lower_snake_case variable name")
    if expr != expr.strip():
        raise ConditionError("no spaces or line breaks before or after the condition")
    if _AND.search(outside) and len(_REFERENCE.findall(expr)) != 2:
        raise ConditionError('expected ${name} on both sides of "and": ${a} and ${b}')
    if _AND.search(outside):
        raise ConditionError(
            'write the conjunction as ${a} and ${b}: lower-case "and", one space on each side'
        )
    raise ConditionError("expected ${name} or ${a} and ${b}")


def condition_problems(expr: Any, categories: Mapping[str, str]) -> list[str]:
    """Return what is wrong with a condition given the workflow's name -> category ([] if valid)."""
    try:
        names = condition_names(expr)
    except ConditionError as exc:
        return [str(exc)]
    problems: list[str] = []
    for name in names:
        category = categories.get(name)
        if category is None:
            problems.append(
                f"unknown variable {name}: declare it as an environment or derived variable"
            )
        elif category not in ROUTABLE_CATEGORIES:
            problems.append(
                f"{category} variable {name} cannot route: "
                "only environment and derived variables can"
            )
    return problems


def env_var_problem(env_var: str) -> str | None:
    """Say why a context variable may not read this env var (None when it may).

    Refused: the server's own settings (``SERVER_ENV_VARS``), and credential-shaped names:
    ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``, ``*PRIVATE*``,
    and the words ``KEY(S)``, ``APIKEY``, ``PASS``, ``PWD``, ``AUTH``, ``DSN``... Names ending
    in ``_URL``/``_URI`` are allowed; their values are checked at read time
    (``credential_value_reason``).
    """
    upper = env_var.upper()
    if upper in SERVER_ENV_VARS:
        return f"{env_var} {SERVER_ENV_REASON}"
    words = upper.split("_")
    if _SECRET_ENV_SUBSTRINGS.search(upper) or _SECRET_ENV_WORDS.intersection(words):
        return f"{env_var} {SECRET_ENV_REASON}"
    return None


def is_secret_env_var(env_var: str) -> bool:
    """Tell whether a context variable may never read this env var (see ``env_var_problem``)."""
    return env_var_problem(env_var) is not None


def credential_value_reason(value: Any) -> str | None:
    """Say why a value looks like a credential (None when it does not); never raises.

    Checked where values are read (env vars, database fields, supplied contexts): a URL with
    userinfo (``scheme://user:password@host``), a secret query parameter (``?token=``), a PEM
    block, and a few well-known token shapes. Such a value is never put in a context or shown.
    """
    if not isinstance(value, str):
        return None
    for match in _URL_AUTHORITY.finditer(value):
        if "@" in match.group(1):
            return "looks like a credential (a URL with userinfo, e.g. a password)"
    if _SECRET_QUERY.search(value):
        return "looks like a credential (a URL with a secret query parameter)"
    for pattern, shape in _CREDENTIAL_SHAPES:
        if pattern.search(value):
            return f"looks like a credential ({shape})"
    return None


def json_value_problem(value: Any, *, max_depth: int = JSON_MAX_DEPTH) -> str | None:
    """Say why a value is not plain, storable JSON (None when it is); iterative: any depth.

    JSON here means what every store and consumer of a run takes: null, strings, booleans,
    signed 64-bit integers, finite numbers, lists and string-keyed objects, nested at most
    ``max_depth`` levels (deeper values would overflow the recursive JSON encoders).
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if item is None or isinstance(item, str | bool):
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                return INT64_MESSAGE
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return "must be a finite number"
            continue
        children: list[Any]
        if isinstance(item, list | tuple):
            children = list(item)
        elif isinstance(item, Mapping):
            if not all(isinstance(key, str) for key in item):
                return "object keys must be strings"
            children = list(item.values())
        else:
            return f"must be JSON (got {type(item).__name__})"
        if depth >= max_depth:
            return f"nested more than {max_depth} levels"
        stack.extend((child, depth + 1) for child in reversed(children))
    return None


def json_nesting_exceeds(value: Any, limit: int = JSON_MAX_DEPTH) -> bool:
    """Tell whether lists/objects nest deeper than ``limit`` levels (iterative: any depth)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def value_matches_type(value: Any, type_: str) -> bool:
    """Tell whether a JSON primitive is of the declared type (a bool is not an integer)."""
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "number":
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
    return isinstance(value, str)


def with_article(type_: str) -> str:
    """Prefix a noun with its article: ``an integer``, ``a string``."""
    return f"an {type_}" if type_[0] in "aeiou" else f"a {type_}"


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


def json_type_name(value: Any) -> str:
    """Name a decoded JSON value's type the way an operator reads it."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float) and not math.isfinite(value):
        return "a non-finite number"
    return with_article(type_of_value(value))


def type_of_value(value: Any) -> str:
    """Infer the declared type of a primitive (for declarative entries that omit ``type``)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


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
    equals: Annotated[str, Field(max_length=MATCH_TEXT_MAX_CHARS)]
    case_sensitive: bool = False
    trim: bool = True


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


# -- errors -----------------------------------------------------------------------------------
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


def _clean_loc(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    # Discriminated unions add the tag (``agent_text``) after the list index; drop it.
    cleaned: list[str | int] = []
    for index, part in enumerate(loc):
        if (
            isinstance(part, str) and index and isinstance(loc[index - 1], int)
            and part in TRIGGER_TYPES
        ):
            continue
        if (
            isinstance(part, str)
            and part.startswith(("function-", "union[", "bool", "int", "float", "str"))
            and cleaned
            and cleaned[-1] in ("value", "default")
        ):
            continue
        cleaned.append(part)
    return tuple(cleaned)


_MESSAGES = {
    "missing": "field required",
    "extra_forbidden": "unknown field",
    "literal_error": None,  # pydantic's text already lists the allowed values
}


def _issue_from_pydantic(error: Mapping[str, Any]) -> ConfigIssue:
    message = _MESSAGES.get(error["type"]) or str(error["msg"])
    message = message.removeprefix("Value error, ")
    if error["type"] == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern")
        if pattern == NAME_PATTERN:
            message = (
                "must be lower_snake_case (a-z, 0-9, single underscores, starting with a letter)"
            )
        elif pattern == ENV_VAR_PATTERN:
            message = (
                "must be an environment variable name (A-Z, 0-9 and _, not starting with a digit)"
            )
    elif error["type"] == "union_tag_invalid":
        message = f"unknown trigger type; expected one of {', '.join(TRIGGER_TYPES)}"
    elif error["type"] == "union_tag_not_found":
        message = f"field required: type (one of {', '.join(TRIGGER_TYPES)})"
    message = message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message
    return ConfigIssue(_clean_loc(tuple(error["loc"])), message)


def _dedupe(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    out = []
    for issue in issues:
        key = (issue.loc, issue.message)
        if key not in seen:
            seen.add(key)
            out.append(issue)
    return out


# -- parsing ----------------------------------------------------------------------------------
MAX_UNSTORABLE_ISSUES = 20


def text_problem(text: str) -> str | None:
    """Say why no UTF-8 file or database can store this text (NUL, lone surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which databases cannot store"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (\\ud800-\\udfff): not valid Unicode text"
    return None


def _unstorable(data: Any) -> list[ConfigIssue]:
    """Find strings (and keys) no UTF-8 file or database can hold, and over-long integers.

    Checked before anything else, so no later message, page or export has to render them.
    """
    issues: list[ConfigIssue] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack and len(issues) < MAX_UNSTORABLE_ISSUES:
        loc, value = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                issues.append(ConfigIssue(loc, problem))
        elif isinstance(value, int) and not isinstance(value, bool):
            if not INT64_MIN <= value <= INT64_MAX:
                issues.append(ConfigIssue(loc, INT64_MESSAGE))
        elif isinstance(value, Mapping):
            children: list[tuple[tuple[str | int, ...], Any]] = []
            for key, child in value.items():
                problem = text_problem(key) if isinstance(key, str) else None
                if problem:
                    shown = key.encode("utf-8", "backslashreplace").decode()
                    shown = shown.replace("\x00", "\\x00")
                    issues.append(ConfigIssue((*loc, shown), f"this key {problem}"))
                else:
                    children.append(((*loc, key), child))
            stack.extend(reversed(children))
        elif isinstance(value, list | tuple):
            stack.extend(reversed([((*loc, index), child) for index, child in enumerate(value)]))
    return issues


def _normalize(data: Any, warnings: list[str]) -> Any:
    """Accept the legacy ``variables`` key (warn, ignore) and flat ``derived_variables``."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            [ConfigIssue((), "the document must be a JSON object with context_variables")]
        )
    data = dict(data)
    section = data.get("context_variables", {})
    if not isinstance(section, Mapping):
        raise ConfigError([ConfigIssue(("context_variables",), "must be an object")])
    section = dict(section)
    for key in LEGACY_KEYS:
        for where, holder in (("", data), ("context_variables.", section)):
            if key in holder:
                holder.pop(key)
                warnings.append(f"{where}{key}: legacy key ignored (use the four category lists)")
    if "derived_variables" in data:
        flat = data.pop("derived_variables")
        if "derived_variables" in section:
            raise ConfigError([ConfigIssue(
                ("derived_variables",),
                "given both flat and under context_variables: keep one",
            )])
        section["derived_variables"] = flat
    data["context_variables"] = section
    return data


def parse_config(data: Any) -> ParsedConfig:
    """Validate a decoded ``context_variables.json`` (or its bytes/str) into a config."""
    warnings: list[str] = []
    if isinstance(data, bytes | str):
        try:
            data = json.loads(data)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, over-long integers
            raise ConfigError([ConfigIssue((), f"not valid JSON: {exc}")]) from None
        except RecursionError:
            raise ConfigError([ConfigIssue((), "the document is nested too deeply")]) from None
    unstorable = _unstorable(data)
    if unstorable:
        raise ConfigError(unstorable)
    data = _normalize(data, warnings)
    try:
        config = ContextVariablesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_dedupe([_issue_from_pydantic(e) for e in exc.errors()])) from None
    except RecursionError:
        raise ConfigError([ConfigIssue((), "the document is nested too deeply")]) from None
    problems = config_problems(config)
    if problems:
        raise ConfigError(problems)
    return ParsedConfig(config, warnings)


def config_problems(config: ContextVariablesFile) -> list[ConfigIssue]:
    """Return the rules that span variables: names, agents, databases, hand-off conditions."""
    issues: list[ConfigIssue] = []
    first_seen: dict[str, tuple[str | int, ...]] = {}
    nodes = config.node_names()
    total = 0
    for category, index, variable in config.variables():
        total += 1
        loc: tuple[str | int, ...] = ("context_variables", CATEGORY_KEYS[category], index, "name")
        if variable.name in RESERVED_NAMES:
            issues.append(
                ConfigIssue(loc, f"{variable.name} is reserved: the runtime always sets it")
            )
        elif variable.name in first_seen:
            issues.append(ConfigIssue(
                loc,
                f"{variable.name} is already declared at "
                f"{format_loc(first_seen[variable.name][:-1])}",
            ))
        else:
            first_seen[variable.name] = loc
        node = nodes.get(variable.name)
        if node is not None:  # seed 002: "Global variable names must never collide with node names"
            issues.append(ConfigIssue(
                loc,
                f"{variable.name} is also {with_article(node)} name: variables and nodes "
                "(agents, tools) must not collide",
            ))
        if variable.name in OUTPUT_NAMESPACES:
            issues.append(ConfigIssue(loc, _namespace_taken(variable.name, "a variable")))
        if variable.name in BASE_FLAGS and category != "environment":
            issues.append(ConfigIssue(
                loc,
                f"{variable.name} is a base flag the runtime reads from "
                f"{BASE_FLAGS[variable.name]} (and suppresses in production): only an "
                f"environment variable may take its name, not {with_article(category)} variable",
            ))
        if (
            isinstance(variable, DatabaseVariable)
            and not variable.source.database_name
            and not config.context_variables.database_name
        ):
            issues.append(ConfigIssue(
                (*loc[:-1], "source", "database_name"),
                "field required: set it here or context_variables.database_name",
            ))
    if total > MAX_VARIABLES:
        issues.append(ConfigIssue(("context_variables",), f"at most {MAX_VARIABLES} variables"))
    categories = config.categories()
    for index, handoff in enumerate(config.handoffs):
        for message in condition_problems(handoff.condition, categories):
            issues.append(ConfigIssue(("handoffs", index, "condition"), message))
    issues.extend(_node_namespace_problems(config))
    issues.extend(_outputs_problems(config.outputs, categories))
    return issues


def _namespace_taken(name: str, what: str) -> str:
    return (
        f"{name} is a namespace of the run's state (seed 004: {{{{{name}.…}}}} reads it): "
        f"{what} may not take its name"
    )


def _node_namespace_problems(config: ContextVariablesFile) -> list[ConfigIssue]:
    """An agent or tool named ``agent`` or ``world`` would shadow (or be shadowed by) the
    namespace in every ``{{agent.…}}`` template: refused where it is named."""
    named: list[tuple[tuple[str | int, ...], str, str]] = []
    section = config.context_variables
    for index, derived in enumerate(section.derived_variables):
        for position, trigger in enumerate(derived.triggers):
            loc = ("context_variables", "derived_variables", index, "triggers", position)
            if isinstance(trigger, ToolResponseTrigger):
                named.append(((*loc, "tool"), trigger.tool, "a tool"))
            else:
                named.append(((*loc, "agent"), trigger.agent, "an agent"))
    for index, handoff in enumerate(config.handoffs):
        named.append((("handoffs", index, "source_agent"), handoff.source_agent, "an agent"))
        named.append((("handoffs", index, "target_agent"), handoff.target_agent, "an agent"))
    for index, output in enumerate(config.outputs):
        named.append((("outputs", index, "tool"), output.tool, "a tool"))
    return [
        ConfigIssue(loc, _namespace_taken(name, what))
        for loc, name, what in named
        if name in OUTPUT_NAMESPACES
    ]


def _outputs_problems(
    outputs: list[OutputMapping], categories: Mapping[str, str]
) -> list[ConfigIssue]:
    """Each target a writable path, not a variable, written by one mapping, never inside
    another's (a path holds a value or keys, not both). Linear: each path's prefixes once."""
    issues: list[ConfigIssue] = []
    written: dict[str, int] = {}  # target -> mapping index
    prefixes: dict[str, int] = {}  # every proper prefix of a target -> a mapping writing below
    for index, output in enumerate(outputs):
        loc: tuple[str | int, ...] = ("outputs", index, "to")
        to = output.to
        bare = to.removeprefix("context.")
        if bare in categories:
            writable = " or ".join(f"{name}.…" for name in OUTPUT_NAMESPACES)
            issues.append(ConfigIssue(loc, (
                f"{to} names {categories[bare]} variable {bare}: a mapping writes {writable}, "
                "never a context variable (those change by context_set only)"
            )))
            continue
        problem = state_path_problem(to)
        if problem:
            issues.append(ConfigIssue(loc, problem))
            continue
        if to in written:
            issues.append(ConfigIssue(
                loc, f"{to} is already written by outputs[{written[to]}]: one mapping per path"
            ))
            continue
        parts = to.split(".")
        above = next(
            (".".join(parts[:n]) for n in range(2, len(parts)) if ".".join(parts[:n]) in written),
            None,
        )
        if above is not None:
            issues.append(ConfigIssue(loc, (
                f"{to} is inside {above}, which outputs[{written[above]}] writes: "
                "a path holds a value or keys, not both"
            )))
            continue
        if to in prefixes:
            issues.append(ConfigIssue(loc, (
                f"{to} holds the path outputs[{prefixes[to]}] writes: a path holds a value "
                "or keys, not both"
            )))
            continue
        written[to] = index
        for n in range(2, len(parts)):
            prefixes.setdefault(".".join(parts[:n]), index)
    return issues


# -- export -----------------------------------------------------------------------------------
def config_export_dict(config: ContextVariablesFile, *, production: bool = False) -> dict[str, Any]:
    """Return the canonical export as plain data (key order fixed by the models).

    The production variant has no environment variables, and no hand-offs gated on them.
    """
    section = config.context_variables
    out: dict[str, Any] = {}
    if section.database_name:
        out["database_name"] = section.database_name
    for category in CATEGORIES:
        key = CATEGORY_KEYS[category]
        if category == "environment" and production:
            out[key] = []
            continue
        out[key] = [_variable_dict(v) for v in getattr(section, key)]
    document: dict[str, Any] = {"context_variables": out}
    handoffs = config.handoffs
    if production:
        # Seed 000: in production the environment flags are absent, so a hand-off gated on one
        # can never fire; it is left out so the production file stays valid on its own.
        suppressed = {v.name for v in section.environment_variables}
        handoffs = [h for h in handoffs if not suppressed & set(condition_names(h.condition))]
    if handoffs:
        document["handoffs"] = [h.model_dump(mode="json") for h in handoffs]
    if config.outputs:  # absent when empty, so files without mappings export as before
        document["outputs"] = [output.model_dump(mode="json") for output in config.outputs]
    return document


def _variable_dict(variable: AnyVariable) -> dict[str, Any]:
    data = variable.model_dump(mode="json", exclude_none=True)
    if isinstance(variable, DerivedVariable):
        for trigger in data["triggers"]:
            match = trigger.get("match")
            if match is not None:
                # Omit the defaults so seed-shaped files round-trip unchanged.
                if match.get("case_sensitive") is False:
                    del match["case_sensitive"]
                if match.get("trim") is True:
                    del match["trim"]
    return data


def config_export_bytes(config: ContextVariablesFile, *, production: bool = False) -> bytes:
    """Return the canonical, byte-stable ``context_variables.json`` (2-space indent, newline)."""
    return _export_dump(config_export_dict(config, production=production))


def export_digest(body: bytes) -> str:
    """Return the digest of an export's bytes (without its ``version`` key): ``sha256:<hex>``."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def config_digest(config: ContextVariablesFile, *, production: bool = False) -> str:
    """Return the digest of the definitions a config holds (its ``version`` key left out)."""
    return export_digest(config_export_bytes(config, production=production))


def export_with_version(body: bytes, *, number: int | None) -> bytes:
    """Return an export with its top-level ``version`` first: the number and the digest of
    ``body``, so the same version always serves the same bytes."""
    document = json.loads(body)
    document.pop("version", None)
    digest = export_digest(_export_dump(document))  # the body itself, for a canonical body
    return _export_dump({"version": {"number": number, "digest": digest}, **document})


def _export_dump(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def json_schema() -> dict[str, Any]:
    """Return the draft 2020-12 JSON Schema of the format."""
    return ContextVariablesFile.model_json_schema(mode="validation")
