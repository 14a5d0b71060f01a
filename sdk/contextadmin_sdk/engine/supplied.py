"""``context_from_supplied``: a context the runtime supplied at start, by the loader's rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .arguments import require_config, require_mapping, require_str
from .coercion import redact_credentials
from .config import ConfigInput, load_config
from .context import (
    NOT_SUPPLIED_REASONS,
    PRODUCTION_PURGE_REASON,
    PRODUCTION_REASON,
    SUPPLIED_REASON,
    Context,
    ContextBuilder,
    ContextError,
)
from .format import (
    BASE_FLAGS,
    ENVIRONMENTS,
    NAME_MAX_CHARS,
    RESERVED_NAMES,
    UNRESOLVED_REASON_MAX_CHARS,
    json_type_name,
    json_value_problem,
    value_matches_type,
    with_article,
)
from .mongo import database_source


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
    unresolved: Mapping[str, Any] | None = None,
) -> Context:
    """Build a run's context from one the runtime supplied at start, by the loader's rules.

    The runtime built its context itself (``build_context`` in its own process); the server
    still owns the rules. So: the base is the run's; declarative variables are the declared
    constants (filled in when left out); derived flags start at their defaults unless supplied;
    every declared variable takes only a value of its declared type (a database value that does
    not match is kept with a warning, as the loader keeps it); in production an environment
    variable or base flag never enters (dropped, provenance ``suppressed`` with
    ``PRODUCTION_PURGE_REASON``, and a warning); a credential-looking value is redacted. A name
    the workflow does not declare is kept with category ``supplied``. A declared database or
    environment variable left out (the runtime could not read it) is ``unresolved``, with
    ``NOT_SUPPLIED_REASONS``' reason, or the runtime's own reason in ``unresolved`` (name ->
    why its look-up failed): the run page shows it, as ``build_context`` would.

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
    b = ContextBuilder({})
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
    reasons = _unresolved_reasons(
        unresolved or {}, categories=categories, supplied=supplied, production=production
    )
    problems.extend(reasons.problems)
    if problems:
        raise ContextError(problems)
    for name, source in read_from.items():  # nothing dropped silently: what it could not read
        category = categories.get(name)
        if category in NOT_SUPPLIED_REASONS and name not in b.context.provenance:
            reason = reasons.given.get(name) or NOT_SUPPLIED_REASONS[category]
            b.note(name, category=category, source=source, status="unresolved", reason=reason)
    if purged:
        b.warn(
            "production: purged environment variables from the supplied context: "
            f"{', '.join(purged)}"
        )
    return b.context


@dataclass
class _Reasons:
    given: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _unresolved_reasons(
    unresolved: Mapping[str, Any],
    *,
    categories: Mapping[str, str],
    supplied: Mapping[str, Any],
    production: bool,
) -> _Reasons:
    """The runtime's reasons for the database and environment variables it could not read,
    checked: each names such a variable the context leaves out, in at most
    ``UNRESOLVED_REASON_MAX_CHARS`` characters; a credential-looking reason is redacted."""
    reasons = _Reasons()
    for name, reason in unresolved.items():
        where = f"unresolved.{name}"
        if categories.get(name) not in NOT_SUPPLIED_REASONS:
            reasons.problems.append(f"{where}: not a database or environment variable here")
        elif name in supplied:
            reasons.problems.append(f"{where}: the context supplies a value for it")
        elif production and categories[name] == "environment":
            reasons.problems.append(
                f"{where}: {PRODUCTION_REASON}: a production run never reads it"
            )
        elif not isinstance(reason, str) or not reason.strip():
            reasons.problems.append(f"{where}: must be a non-empty string (why it is unread)")
        elif len(reason) > UNRESOLVED_REASON_MAX_CHARS:
            reasons.problems.append(
                f"{where}: {len(reason)} characters, at most {UNRESOLVED_REASON_MAX_CHARS}"
            )
        else:
            shown, redacted = redact_credentials(reason)
            reasons.given[name] = f"the runtime could not read it: {redacted or shown}"
    return reasons
