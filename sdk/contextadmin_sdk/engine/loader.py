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

The pieces live by job: ``context`` (``Context``, its builder, the reasons), ``coercion``
(env values, credential redaction), ``mongo`` (the look-ups) and ``supplied``
(``context_from_supplied``: the same rules for a context the runtime supplies at start).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .arguments import require_mapping, require_str
from .coercion import (
    ENV_FALSE_WORDS,
    coerce_env,
    env_coercion,
    env_flag,
    is_production,
    redact_credentials,
)
from .config import ConfigInput, load_config
from .context import (
    NOT_SUPPLIED_REASONS,
    PRODUCTION_PURGE_REASON,
    PRODUCTION_REASON,
    STATUSES,
    SUPPLIED_REASON,
    Context,
    ContextBuilder,
    ContextError,
)
from .format import (
    BASE_FLAGS,
    ConfigError,
    ContextVariablesFile,
    DatabaseVariable,
    EnvironmentVariable,
    env_var_problem,
    json_type_name,
    value_matches_type,
)
from .log import logger, safe_preview
from .mongo import Lookup, database_source, fetch_database_variables
from .supplied import context_from_supplied

if TYPE_CHECKING:  # pymongo is the SDK's "mongo" extra
    from pymongo import MongoClient

# Public names of the loader's job, wherever their module: callers import them from here.
__all__ = [
    "BASE_FLAGS",
    "NOT_SUPPLIED_REASONS",
    "NO_MONGO_REASON",
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

NO_MONGO_REASON = "no MongoDB configured"
MAX_ISSUE_WARNINGS = 20  # an invalid file can have hundreds of issues; name the first ones


# -- steps ------------------------------------------------------------------------------------
def _seed_minimal_base(
    b: ContextBuilder, *, workflow_name: str, enterprise_id: str, production: bool
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


def _load(config: ConfigInput, b: ContextBuilder) -> ContextVariablesFile | None:
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
    config: ContextVariablesFile, b: ContextBuilder, *, production: bool
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
    if include is not None and include.strip().lower() in ENV_FALSE_WORDS and database:
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


def _resolve_environment(variables: list[EnvironmentVariable], b: ContextBuilder) -> None:
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
        value, problem = env_coercion(raw, variable.type)
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


def _seed_declarative(config: ContextVariablesFile, b: ContextBuilder) -> None:
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
    b: ContextBuilder,
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
        mismatch = None if value_matches_type(lookup.value, variable.type) else (
            f"declared {variable.type} but {lookup.source} holds "
            f"{json_type_name(lookup.value)}; kept as is"
        )
        # said beside the value too (its provenance), where the run page and preview show it
        b.put(variable.name, value, **put, status="resolved", reason=mismatch)
        if mismatch is not None:
            b.warn(f"{variable.name}: {mismatch}")


def _seed_derived(config: ContextVariablesFile, b: ContextBuilder) -> None:
    """Derived variables start at their defaults; the DerivedContextManager flips them later."""
    for variable in config.context_variables.derived_variables:
        b.put(
            variable.name, variable.default, category="derived", source="derived", status="default"
        )


def _purge_production(config: ContextVariablesFile | None, b: ContextBuilder) -> None:
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


def _log_summary(b: ContextBuilder, *, workflow_name: str, enterprise_id: str) -> None:
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
    b = ContextBuilder(environ)
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

