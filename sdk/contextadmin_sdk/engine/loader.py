"""Build a run's context from ``context_variables.json`` (seed 000 "Runtime Loading" 1-7).

Every variable ends with a provenance entry ``{"category", "source", "status", "reason"}``, so
nothing is dropped silently: production-suppressed environment flags, schema-gated database
variables and failed look-ups are all visible, with the reason.

Decisions (documented in docs/engine.md, *Decisions*):
- an unset environment variable takes its ``default`` (status ``default``); without one a
  boolean is ``False`` (status ``default``, seed 000: "treat absence as a safe default (usually
  false)") and any other type is left out of ``values`` (status ``unresolved``);
- an unparsable integer/number takes its ``default`` with a warning (``unresolved`` without);
- a database value that does not match the declared type is kept, with a warning;
- ``CONTEXT_INCLUDE_SCHEMA`` suppresses database variables only when it is 0/false/no/off;
- coercion never raises: a value too long, beyond 64 bits, or not storable text is unparsable;
- a value that looks like a credential (``credential_value_reason``) is replaced by
  ``REDACTED_MARKER``, with the reason in its provenance, wherever it is read.

``context_from_supplied`` applies the same rules to a context the runtime supplies at start.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .arguments import require_config, require_mapping, require_str
from .config import ConfigInput, load_config
from .format import (
    BASE_FLAGS,
    ENV_NUMBER_MAX_CHARS,
    ENV_VALUE_MAX_CHARS,
    ENVIRONMENTS,
    INT64_MAX,
    INT64_MIN,
    NAME_MAX_CHARS,
    REDACTED_MARKER,
    RESERVED_NAMES,
    ConfigError,
    ContextVariablesFile,
    DatabaseVariable,
    EnvironmentVariable,
    credential_value_reason,
    env_var_problem,
    json_type_name,
    json_value_problem,
    text_problem,
    value_matches_type,
    with_article,
)
from .log import context_diff, logger, safe_preview
from .mongo import Lookup, database_source, fetch_database_variables

if TYPE_CHECKING:  # pymongo is the SDK's "mongo" extra
    from pymongo import MongoClient

__all__ = [
    "BASE_FLAGS",
    "PRODUCTION_PURGE_REASON",
    "PRODUCTION_REASON",
    "STATUSES",
    "SUPPLIED_REASON",
    "Context",
    "ContextError",
    "build_context",
    "coerce_env",
    "context_from_supplied",
    "env_flag",
    "is_production",
    "redact_credentials",
]

STATUSES = ("resolved", "default", "unresolved", "suppressed")
PRODUCTION_REASON = "suppressed in production"
PRODUCTION_PURGE_REASON = f"{PRODUCTION_REASON} (defensive purge)"
SUPPLIED_REASON = "supplied by the runtime at start"
NO_MONGO_REASON = "no MongoDB configured"
MAX_ISSUE_WARNINGS = 20  # an invalid file can have hundreds of issues; name the first ones

_TRUTHY = frozenset({"1", "true", "yes", "on"})
_FALSY = frozenset({"0", "false", "no", "off"})
_INTEGER = re.compile(r"[+-]?\d+")
# Unambiguous (one way to match any text), so a failed match never backtracks polynomially.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


@dataclass
class Context:
    """A run's context: AG2 ContextVariables data, where each value came from, and warnings."""

    values: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return the context as JSON-safe data."""
        return {
            "values": dict(self.values),
            "provenance": {name: dict(entry) for name, entry in self.provenance.items()},
            "warnings": list(self.warnings),
        }


def env_flag(raw: str | None) -> bool:
    """Coerce an env value to a boolean: only 1/true/yes/on (any case, trimmed) are true."""
    return raw is not None and raw.strip().lower() in _TRUTHY


def is_production(environ: Mapping[str, str]) -> bool:
    """Tell whether ``ENVIRONMENT=production`` (any case, trimmed)."""
    return environ.get("ENVIRONMENT", "").strip().lower() == "production"


def _coerce(raw: str, type_: str) -> tuple[Any, str | None]:
    """Coerce an env value to the declared type: (value, None), or (None, why it is not one)."""
    if type_ == "boolean":
        return env_flag(raw), None
    if len(raw) > ENV_VALUE_MAX_CHARS:
        return None, f"is longer than {ENV_VALUE_MAX_CHARS} characters"
    problem = text_problem(raw)
    if problem:
        return None, problem
    if type_ not in ("integer", "number"):
        return raw, None
    text = raw.strip()
    if len(text) > ENV_NUMBER_MAX_CHARS:  # int() of a long digit string raises, float() is slow
        return None, f"is not a valid {type_} (longer than {ENV_NUMBER_MAX_CHARS} characters)"
    if _INTEGER.fullmatch(text):
        integer = int(text)
        if not INT64_MIN <= integer <= INT64_MAX:
            return None, f"is not a valid {type_} (outside the signed 64-bit range)"
        return integer, None
    if type_ == "number" and _NUMBER.fullmatch(text) and math.isfinite(number := float(text)):
        return number, None
    return None, f"is not a valid {type_}"


def coerce_env(raw: str, type_: str) -> tuple[bool, Any]:
    """Coerce an env value to the declared type; return (ok, value). Never raises.

    Unparsable, too long (``ENV_VALUE_MAX_CHARS``; ``ENV_NUMBER_MAX_CHARS`` for numbers), outside
    signed 64 bits, or text no database can store: (False, None), and the caller falls back to
    the declared default with a warning (docs/engine.md, *Decisions*).
    """
    if not isinstance(raw, str):
        return False, None
    value, problem = _coerce(raw, type_)
    return (problem is None), value


def redact_credentials(value: Any) -> tuple[Any, str | None]:
    """Return (value, None), or (``REDACTED_MARKER``, why) when any string in it looks secret.

    A list or object holding one credential-looking string is replaced whole: its other parts
    could be the rest of the same secret (a user beside a password).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            reason = credential_value_reason(item)
            if reason:
                return REDACTED_MARKER, f"{reason}: replaced by {REDACTED_MARKER}"
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value, None


class _Builder:
    """Accumulates values, provenance and warnings, logging diffs between steps when verbose."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.context = Context()
        self.verbose = env_flag(environ.get("CONTEXT_VERBOSE_DEBUG"))
        self.secret_names: set[str] = set()

    def put(
        self,
        name: str,
        value: Any,
        *,
        category: str,
        source: str,
        status: str,
        reason: str | None = None,
    ) -> None:
        self.context.values[name] = value
        self.note(name, category=category, source=source, status=status, reason=reason)

    def note(
        self, name: str, *, category: str, source: str, status: str, reason: str | None = None
    ) -> None:
        """Record provenance for a variable that has no value (or set it alongside one)."""
        if status != "resolved" and status != "default":
            self.context.values.pop(name, None)
        self.context.provenance[name] = {
            "category": category,
            "source": source,
            "status": status,
            "reason": reason,
        }

    def warn(self, message: str) -> None:
        self.context.warnings.append(message)
        logger.warning("context: %s", message)

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        before = dict(self.context.values) if self.verbose else {}
        yield
        if self.verbose:
            diff = context_diff(
                before, self.context.values, secret_names=frozenset(self.secret_names)
            )
            logger.debug("context diff after %s: %s", label, "; ".join(diff) or "(no change)")


# -- steps ------------------------------------------------------------------------------------
def _seed_minimal_base(
    b: _Builder, *, workflow_name: str, enterprise_id: str, production: bool
) -> None:
    """Step 1: enterprise_id, workflow_name, and the two baked-in flags unless in production."""
    b.put("enterprise_id", enterprise_id, category="base", source="run", status="resolved")
    b.put("workflow_name", workflow_name, category="base", source="run", status="resolved")
    for name, env_var in BASE_FLAGS.items():
        if production:
            b.note(
                name, category="base", source=env_var, status="suppressed", reason=PRODUCTION_REASON
            )
        elif env_var in b.environ:
            b.put(
                name,
                env_flag(b.environ[env_var]),
                category="base",
                source=env_var,
                status="resolved",
            )
        else:
            b.put(
                name,
                False,
                category="base",
                source=env_var,
                status="default",
                reason=f"{env_var} is unset: false",
            )


def _load(config: ConfigInput, b: _Builder) -> ContextVariablesFile | None:
    """Step 2: validate; an invalid config leaves the minimal base only, with warnings."""
    try:
        parsed = load_config(config)
    except ConfigError as exc:
        for issue in exc.issues[:MAX_ISSUE_WARNINGS]:
            where = issue.path or "(document)"
            b.warn(f"invalid context_variables.json at {where}: {issue.message}")
        if len(exc.issues) > MAX_ISSUE_WARNINGS:
            more = len(exc.issues) - MAX_ISSUE_WARNINGS
            b.warn(f"invalid context_variables.json: {more} more issues")
        b.warn("using the minimal base context only")
        return None
    except TypeError as exc:  # not a config at all (None, a list...): step 2's warning too
        b.warn(f"invalid context_variables.json at (document): {exc}")
        b.warn("using the minimal base context only")
        return None
    except (RecursionError, ValueError) as exc:  # never raise out of build_context
        b.warn(f"invalid context_variables.json at (document): {type(exc).__name__}")
        b.warn("using the minimal base context only")
        return None
    for message in parsed.warnings:
        b.warn(message)
    return parsed.config


def _gate(
    config: ContextVariablesFile, b: _Builder, *, production: bool
) -> tuple[list[EnvironmentVariable], list[DatabaseVariable]]:
    """Step 3: production clears environment variables; CONTEXT_INCLUDE_SCHEMA may drop database."""
    section = config.context_variables
    environment = list(section.environment_variables)
    if production and environment:
        for variable in environment:
            b.note(
                variable.name,
                category="environment",
                source=variable.source.env_var,
                status="suppressed",
                reason=PRODUCTION_REASON,
            )
        logger.info(
            "production: suppressed %d environment variables: %s",
            len(environment),
            ", ".join(v.name for v in environment),
        )
        environment = []
    database = list(section.database_variables)
    include = b.environ.get("CONTEXT_INCLUDE_SCHEMA")
    if include is not None and include.strip().lower() in _FALSY and database:
        reason = f"CONTEXT_INCLUDE_SCHEMA={include.strip()} suppresses database variables"
        for db_variable in database:
            db, collection, _, field_ = database_source(
                db_variable, default_database=section.database_name
            )
            b.note(
                db_variable.name,
                category="database",
                source=f"db.{db}.{collection}.{field_}",
                status="suppressed",
                reason=reason,
            )
        logger.info("schema gating: %s (%d)", reason, len(database))
        database = []
    return environment, database


def _resolve_environment(variables: list[EnvironmentVariable], b: _Builder) -> None:
    """Step 4: read each env var from ``environ``, coerce it, or fall back to its default."""
    for variable in variables:
        name, env_var = variable.name, variable.source.env_var
        put = {"category": "environment", "source": env_var}
        refused = env_var_problem(env_var)
        if refused:  # the format refuses these; never read one anyway
            b.secret_names.add(name)
            b.note(name, **put, status="suppressed", reason=refused)
            continue
        raw = b.environ.get(env_var)
        if raw is None:
            if variable.default is not None:
                b.put(
                    name,
                    variable.default,
                    **put,
                    status="default",
                    reason=f"{env_var} is unset: using the declared default",
                )
            elif variable.type == "boolean":
                b.put(name, False, **put, status="default", reason=f"{env_var} is unset: false")
            else:
                b.note(
                    name,
                    **put,
                    status="unresolved",
                    reason=f"{env_var} is unset and has no default",
                )
            continue
        value, problem = _coerce(raw, variable.type)
        if problem is None:
            value, redacted = redact_credentials(value)
            if redacted:
                b.secret_names.add(name)
                b.put(name, value, **put, status="resolved", reason=f"{env_var} {redacted}")
                b.warn(f"{name}: {env_var} {redacted}")
            else:
                b.put(name, value, **put, status="resolved")
            continue
        shown = f"{env_var}={safe_preview(raw, env_var=env_var)} {problem}"
        if variable.default is not None:
            reason = f"{shown}: using the declared default"
            b.put(name, variable.default, **put, status="default", reason=reason)
        else:
            reason = f"{shown} and there is no default"
            b.note(name, **put, status="unresolved", reason=reason)
        b.warn(f"{name}: {reason}")


def _seed_declarative(config: ContextVariablesFile, b: _Builder) -> None:
    """Step 5: declarative values, verbatim, never gated."""
    for variable in config.context_variables.declarative_variables:
        b.put(
            variable.name,
            variable.value,
            category="declarative",
            source="static",
            status="resolved",
        )


def _resolve_database(
    variables: list[DatabaseVariable],
    b: _Builder,
    *,
    default_database: str | None,
    enterprise_id: str,
    mongo: MongoClient[Any] | None,
) -> None:
    """Step 6: one look-up per (database, collection, search_by); failures become unresolved."""
    if not variables:
        return
    lookups: dict[str, Lookup]
    fallback = NO_MONGO_REASON
    if mongo is None:
        lookups = {}
    else:
        try:
            lookups = fetch_database_variables(
                mongo, variables, enterprise_id=enterprise_id, default_database=default_database
            )
        except Exception as exc:  # a run must start even when the look-up breaks
            logger.exception("database variables: look-up failed")
            lookups = {}
            fallback = f"MongoDB error: {type(exc).__name__}"
    for variable in variables:
        db, collection, _, field_ = database_source(variable, default_database=default_database)
        lookup = lookups.get(variable.name)
        if lookup is None:
            lookup = Lookup("unresolved", None, f"db.{db}.{collection}.{field_}", fallback)
        put = {"category": "database", "source": lookup.source}
        if lookup.status != "resolved":
            b.note(variable.name, **put, status="unresolved", reason=lookup.reason)
            continue
        value, redacted = redact_credentials(lookup.value)
        if redacted:
            b.secret_names.add(variable.name)
            b.put(variable.name, value, **put, status="resolved", reason=redacted)
            b.warn(f"{variable.name}: {lookup.source} {redacted}")
            continue
        b.put(variable.name, value, **put, status="resolved")
        if not value_matches_type(lookup.value, variable.type):
            b.warn(
                f"{variable.name}: declared {variable.type} but {lookup.source} holds "
                f"{json_type_name(lookup.value)}; kept as is"
            )


def _seed_derived(config: ContextVariablesFile, b: _Builder) -> None:
    """Derived variables start at their defaults; the DerivedContextManager flips them later."""
    for variable in config.context_variables.derived_variables:
        b.put(
            variable.name, variable.default, category="derived", source="derived", status="default"
        )


def _purge_production(config: ContextVariablesFile | None, b: _Builder) -> None:
    """The final defensive purge: no environment flag may leave the loader in production."""
    names = set(BASE_FLAGS)
    if config is not None:
        names.update(v.name for v in config.context_variables.environment_variables)
    leaked = sorted(name for name in names if name in b.context.values)
    for name in leaked:
        entry = b.context.provenance.get(name, {})
        b.note(
            name,
            category=entry.get("category", "environment"),
            source=entry.get("source", ""),
            status="suppressed",
            reason=PRODUCTION_PURGE_REASON,
        )
    if leaked:
        b.warn(
            f"production: purged environment variables that survived gating: {', '.join(leaked)}"
        )


def _log_summary(b: _Builder, *, workflow_name: str, enterprise_id: str) -> None:
    """Step 7: one safe summary line, and a per-variable preview at DEBUG."""
    counts = dict.fromkeys(STATUSES, 0)
    for entry in b.context.provenance.values():
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    logger.info(
        "context for workflow=%s enterprise=%s: %d values (%s)",
        workflow_name,
        enterprise_id,
        len(b.context.values),
        ", ".join(f"{count} {status}" for status, count in counts.items()),
    )
    if not logger.isEnabledFor(logging.DEBUG):
        return
    for name, entry in b.context.provenance.items():
        shown = "-"
        if name in b.context.values:
            env_var = entry["source"] if entry["category"] in ("environment", "base") else None
            shown = safe_preview(b.context.values[name], env_var=env_var)
        logger.debug(
            "context %s=%s [%s %s from %s]%s",
            name,
            shown,
            entry["category"],
            entry["status"],
            entry["source"],
            f": {entry['reason']}" if entry["reason"] else "",
        )


# -- entry point ------------------------------------------------------------------------------
def build_context(
    config: ConfigInput,
    *,
    workflow_name: str,
    enterprise_id: str,
    environ: Mapping[str, str] = os.environ,
    mongo: MongoClient[Any] | None = None,
) -> Context:
    """Build a run's context by seed 000 "Runtime Loading"; never raises for bad config or DB
    (a config of no config form, ``None`` say, is a bad config too: a warning); other
    arguments outside the signature raise ``TypeError`` naming the parameter."""
    require_str("workflow_name", workflow_name)
    require_str("enterprise_id", enterprise_id)
    require_mapping("environ", environ)
    b = _Builder(environ)
    production = is_production(environ)
    with b.step("step 1 (minimal base)"):
        _seed_minimal_base(
            b, workflow_name=workflow_name, enterprise_id=enterprise_id, production=production
        )
    with b.step("step 2 (config)"):
        parsed = _load(config, b)
    if parsed is not None:
        section = parsed.context_variables
        with b.step("step 3 (gating)"):
            environment, database = _gate(parsed, b, production=production)
        with b.step("step 4 (environment)"):
            _resolve_environment(environment, b)
        with b.step("step 5 (declarative)"):
            _seed_declarative(parsed, b)
        with b.step("step 6 (database)"):
            _resolve_database(
                database,
                b,
                default_database=section.database_name,
                enterprise_id=enterprise_id,
                mongo=mongo,
            )
        with b.step("derived defaults"):
            _seed_derived(parsed, b)
    if production:
        with b.step("production purge"):
            _purge_production(parsed, b)
    _log_summary(b, workflow_name=workflow_name, enterprise_id=enterprise_id)
    return b.context


# -- a context supplied by the runtime --------------------------------------------------------
class ContextError(ValueError):
    """A supplied context the run cannot take; each of ``problems`` names ``context.<name>``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def _check_environment(environment: str) -> bool:
    """Return whether ``environment`` is production; refuse one outside ENVIRONMENTS."""
    if environment not in ENVIRONMENTS:
        raise ValueError(f"environment: must be one of {', '.join(ENVIRONMENTS)}")
    return environment == "production"


def context_from_supplied(
    config: ConfigInput,
    supplied: Mapping[str, Any],
    *,
    workflow_name: str,
    enterprise_id: str,
    environment: str = "development",
) -> Context:
    """Build a run's context from one the runtime supplied at start, by the loader's rules.

    The runtime built its context itself (``build_context`` in its own process); the server
    still owns the rules. So: the base is the run's; declarative variables are the declared
    constants (filled in when left out); derived flags start at their defaults unless supplied;
    every declared variable takes only a value of its declared type (a database value that does
    not match is kept with a warning, as the loader keeps it); in production an environment
    variable or base flag never enters (dropped, provenance ``suppressed`` with
    ``PRODUCTION_PURGE_REASON``, and a warning); a credential-looking value is redacted. A name
    the workflow does not declare is kept with category ``supplied``.

    Raises ``ConfigError`` for an invalid config, ``ValueError`` for an unknown ``environment``,
    and ``ContextError`` naming every ``context.<name>`` that breaks a rule.
    """
    require_config("config", config)
    require_mapping("supplied", supplied)
    require_str("workflow_name", workflow_name)
    require_str("enterprise_id", enterprise_id)
    require_str("environment", environment)
    production = _check_environment(environment)
    parsed = load_config(config).config
    section = parsed.context_variables
    categories = parsed.categories()
    types = {variable.name: variable.type for _, _, variable in parsed.variables()}
    declarative = {variable.name: variable.value for variable in section.declarative_variables}
    environment_sources = {v.name: v.source.env_var for v in section.environment_variables}
    # where the runtime read each value, named as build_context names it (the preview's labels)
    read_from: dict[str, str] = {**BASE_FLAGS, **environment_sources}
    for db_variable in section.database_variables:
        db, collection, _, field_ = database_source(
            db_variable, default_database=section.database_name
        )
        read_from[db_variable.name] = f"db.{db}.{collection}.{field_}"
    run_base = {"enterprise_id": enterprise_id, "workflow_name": workflow_name}

    problems: list[str] = []
    b = _Builder({})
    for name, value in run_base.items():
        b.put(name, value, category="base", source="run", status="resolved")
    for derived in section.derived_variables:
        b.put(derived.name, derived.default, category="derived", source="derived", status="default")
    for name, value in declarative.items():
        b.put(name, value, category="declarative", source="static", status="resolved")
    if production:  # visible, never silent: every flag this run will not have
        for name, env_var in {**BASE_FLAGS, **environment_sources}.items():
            b.note(
                name,
                category=categories.get(name, "base"),
                source=env_var,
                status="suppressed",
                reason=PRODUCTION_REASON,
            )

    purged: list[str] = []
    for name, value in supplied.items():
        where = f"context.{name}"
        if not isinstance(name, str) or not name or len(name) > NAME_MAX_CHARS:
            problems.append(f"{where}: names are non-empty strings of at most {NAME_MAX_CHARS}")
            continue
        problem = json_value_problem(value)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        category = categories.get(name, "base" if name in BASE_FLAGS else None)
        if name in RESERVED_NAMES:
            if value != run_base[name] or not isinstance(value, str):
                problems.append(f"{where}: must be the run's own {name} ({run_base[name]!r})")
            continue
        if production and (category == "environment" or name in BASE_FLAGS):
            source = environment_sources.get(name) or BASE_FLAGS[name]
            b.note(
                name,
                category=category or "base",
                source=source,
                status="suppressed",
                reason=PRODUCTION_PURGE_REASON,
            )
            purged.append(name)
            continue
        declared = types.get(name, "boolean" if name in BASE_FLAGS else None)
        if category == "declarative":
            if not (value_matches_type(value, declared or "string") and value == declarative[name]):
                problems.append(
                    f"{where}: declarative variable {name} is a constant: leave it out or send "
                    f"its declared value {declarative[name]!r}"
                )
            continue
        if declared is not None and category != "database" and not value_matches_type(
            value, declared
        ):
            problems.append(
                f"{where}: takes {with_article(declared)} (the declared type), "
                f"got {json_type_name(value)}"
            )
            continue
        value, redacted = redact_credentials(value)
        b.put(
            name,
            value,
            category=category or "supplied",
            source=read_from.get(name, "runtime"),
            status="resolved",
            reason=f"{SUPPLIED_REASON}; {redacted}" if redacted else SUPPLIED_REASON,
        )
        if redacted:
            b.warn(f"{name}: {redacted}")
        elif declared is not None and not value_matches_type(value, declared):
            b.warn(
                f"{name}: declared {declared} but the runtime supplied "
                f"{json_type_name(value)}; kept as is"
            )
    if problems:
        raise ContextError(problems)
    if purged:
        b.warn(
            "production: purged environment variables from the supplied context: "
            f"{', '.join(purged)}"
        )
    return b.context
