"""Run lifecycle: start a run (pin its definitions, build or take its context, store it).

The definitions a run pins are the ones its runtime ran with (``run_pinning``): its context is
judged by them, so a run is never refused because a newer version was published since.

A run ends with a ``run_status`` event, which goes through ingest like every other event.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import orjson
from contextadmin_sdk.engine import (
    BASE_FLAGS,
    RUN_ENDED_STATUSES,
    Context,
    ContextError,
    RunState,
    build_context,
    context_from_supplied,
)
from contextadmin_sdk.engine.format import (
    ENVIRONMENTS,
    MAX_VARIABLES,
    RUN_ID_PATTERN,
    RUN_ID_RULE,
    ConfigError,
    enterprise_id_problem,
    json_value_problem,
    run_id_valid,
)
from django.conf import settings
from django.db import IntegrityError, transaction

from contextadmin.errors import BadRequest, Conflict, NotFound, RateLimited
from contextadmin.models import Workflow
from contextadmin.selectors import VersionNotFound, workflow_published_config
from runs.models import ApiToken, Run, RunSnapshot
from runs.mongo import mongo_client_get
from runs.services.broadcast import run_started_broadcast
from runs.services.run_pinning import (
    PinnedDefinitions,
    definitions_check,
    definitions_pin,
    runtime_check,
)
from runs.signals import run_stored
from runs.tokens import token_check_workflow

logger = logging.getLogger(__name__)

__all__ = ["RUN_ID_PATTERN", "StartedRun", "run_start"]
CONTEXT_MAX_BYTES = 256 * 1024


def _supplied_context_check(context: Any) -> dict[str, Any]:
    if not isinstance(context, dict):
        raise BadRequest("context: must be an object of variable name -> value")
    problem = json_value_problem(context)
    if problem is not None:  # e.g. nested too deeply for any JSON encoder: say how deep
        raise BadRequest(f"context: {problem}")
    size = len(orjson.dumps(context))
    if size > CONTEXT_MAX_BYTES:
        raise BadRequest(f"context: {size} bytes, at most {CONTEXT_MAX_BYTES}")
    for key in context:
        if not isinstance(key, str) or not key or len(key) > 64:
            raise BadRequest(f"context.{key}: names must be non-empty strings of at most 64 chars")
    return context


def _unresolved_check(unresolved: Any, *, context: dict[str, Any] | None) -> dict[str, Any]:
    """The runtime's reasons for what it could not read: an object, beside ``context`` (the
    engine checks each name and reason against the definitions)."""
    if unresolved is None:
        return {}
    if context is None:
        raise BadRequest("unresolved: goes with context (without it, the server reads them)")
    if not isinstance(unresolved, dict):
        raise BadRequest("unresolved: must be an object of variable name -> reason")
    if len(unresolved) > MAX_VARIABLES:
        raise BadRequest(f"unresolved: {len(unresolved)} names, at most {MAX_VARIABLES}")
    return unresolved


NOT_READ_REASON = (
    "not read by the server: the runtime's own definitions declare it and {workflow}'s "
    "published definitions do not (the server reads its environment and MongoDB only for "
    "what they declare); send its value in context"
)
NOT_LOOKED_UP_REASON = (
    "not read by the server: the runtime's own definitions also declare {source}, which "
    "{workflow}'s published definitions do not, so MongoDB is not asked; send the values in "
    "context"
)


def _context_read(
    pinned: PinnedDefinitions, *, workflow: Workflow, enterprise_id: str, environment: str
) -> Context:
    """Build a run's context from this server's environment and MongoDB, reading only what the
    workflow's published definitions declare (its operators chose those reads).

    A runtime's own definitions (not published here) may declare any env var or any database,
    collection, look-up field and field: read as they ask, they would hand any token the
    server's environment and every MongoDB document it can reach. An env var they declare
    beyond the published ones is left unread (its declared default still applies); if they
    declare a database source beyond the published ones, MongoDB is not asked at all. Each is
    said so in its provenance."""
    environ = {**os.environ, "ENVIRONMENT": environment}
    mongo = mongo_client_get()
    section = pinned.config.context_variables
    refused_env: dict[str, str] = {}
    refused_db: dict[str, str] = {}  # name -> db.<database>.<collection>.<field>
    if pinned.source == Run.DefinitionsSource.RUNTIME:
        allowed_env, allowed_db = _published_reads(workflow)
        refused_env = {
            v.name: v.source.env_var for v in section.environment_variables
            if v.source.env_var not in allowed_env and v.source.env_var not in BASE_FLAGS.values()
        }
        environ = {k: v for k, v in environ.items() if k not in refused_env.values()}
        refused_db = {
            v.name: "db.{0}.{1}.{3}".format(*_db_source(v, section))
            for v in section.database_variables if _db_source(v, section) not in allowed_db
        }
        if refused_db:
            mongo = None
    built = build_context(
        pinned.config, workflow_name=workflow.name, enterprise_id=enterprise_id,
        environ=environ, mongo=mongo,
    )
    reason = NOT_READ_REASON.format(workflow=workflow.name)
    for name, env_var in refused_env.items():
        if name in built.provenance:
            built.provenance[name]["reason"] = f"{env_var} {reason}"
    for variable in section.database_variables if refused_db else ():
        entry = built.provenance.get(variable.name)
        if entry is not None and entry.get("status") == "unresolved":
            entry["reason"] = reason if variable.name in refused_db else (
                NOT_LOOKED_UP_REASON.format(
                    source=next(iter(refused_db.values())), workflow=workflow.name
                )
            )
    return built


def _published_reads(workflow: Workflow) -> tuple[set[str], set[tuple[str, ...]]]:
    """The env vars and database sources the workflow's published definitions declare."""
    try:
        published, _ = workflow_published_config(workflow=workflow)
    except (VersionNotFound, ConfigError):
        return set(), set()
    section = published.context_variables
    return (
        {v.source.env_var for v in section.environment_variables},
        {_db_source(v, section) for v in section.database_variables},
    )


def _db_source(variable: Any, section: Any) -> tuple[str, ...]:
    """Where a database variable is read: (database, collection, look-up field, field)."""
    source = variable.source
    database = source.database_name or section.database_name or ""
    return (database, source.collection, source.search_by, source.field)


@dataclass
class StartedRun:
    run: Run
    created: bool


def run_start(
    *,
    workflow_name: str,
    enterprise_id: str,
    run_id: str | None = None,
    environment: str | None = None,
    context: dict[str, Any] | None = None,
    runtime: Any = None,
    definitions: Any = None,
    unresolved: Any = None,
    token: ApiToken | None = None,
) -> StartedRun:
    """Start a run: pin the definitions the runtime ran with (the published ones when it sends
    none), build (or take) its context by them, store it with the runtime that reports it."""
    if not isinstance(workflow_name, str) or not workflow_name:
        raise BadRequest("workflow: required (a workflow name)")
    problem = enterprise_id_problem(enterprise_id)
    if problem is not None:
        raise BadRequest(f"enterprise_id: {problem}")
    if run_id is not None and not run_id_valid(run_id):
        raise BadRequest(f"run_id: {RUN_ID_RULE}")
    environment = environment or settings.ENVIRONMENT or "development"
    if environment not in ENVIRONMENTS:
        raise BadRequest(f"environment: must be one of {', '.join(ENVIRONMENTS)}")
    if context is not None:
        context = _supplied_context_check(context)
    unresolved = _unresolved_check(unresolved, context=context)
    checked_runtime = runtime_check(runtime)
    definitions_check(definitions)
    token_check_workflow(token=token, workflow_name=workflow_name)
    workflow = Workflow.objects.filter(name=workflow_name).first()
    if workflow is None:
        raise NotFound(f"workflow: no workflow named {workflow_name!r}")

    asked = _Asked(workflow_name, enterprise_id, environment, definitions)
    if run_id is not None:
        existing = Run.objects.filter(pk=run_id).first()
        if existing is not None:
            return _run_start_retry(existing, asked=asked, workflow=workflow, token=token)

    _token_runs_check(token)
    pinned = definitions_pin(workflow=workflow, definitions=definitions, token=token)
    config = pinned.config
    try:
        if context is None:
            built = _context_read(
                pinned, workflow=workflow, enterprise_id=enterprise_id, environment=environment
            )
        else:  # the runtime built it; the engine still applies the rules (types, production)
            built = context_from_supplied(
                config,
                context,
                workflow_name=workflow_name,
                enterprise_id=enterprise_id,
                environment=environment,
                unresolved=unresolved,
            )
        state = RunState(config, built.values, environment=environment)
    except ContextError as exc:
        raise BadRequest(exc.problems[0], problems=exc.problems) from None
    provenance, warnings = dict(built.provenance), list(built.warnings)
    try:
        with transaction.atomic():
            _token_runs_check(token, lock=True)
            run = Run.objects.create(
                **({"id": run_id} if run_id else {}),
                workflow=workflow,
                workflow_name=workflow_name,
                **pinned.run_fields(),
                runtime=checked_runtime,
                enterprise_id=enterprise_id,
                environment=environment,
                provenance=provenance,
                warnings=warnings,
                state=state.to_dict(),
                token=token,
            )
            RunSnapshot.objects.create(run=run, seq=0, state=run.state)
            run_stored.send(sender=Run, run=run)  # the webhooks' outbox (runs.signals)
            run_started_broadcast(run)
    except IntegrityError:
        # A concurrent start with the same run_id won the race: answer as for a retry.
        existing = Run.objects.filter(pk=run_id).first() if run_id else None
        if existing is None:
            raise
        return _run_start_retry(existing, asked=asked, workflow=workflow, token=token)
    logger.info("run %s started for %s/%s (%s)", run.pk, workflow_name, enterprise_id, environment)
    return StartedRun(run=run, created=True)


def _token_runs_check(token: ApiToken | None, *, lock: bool = False) -> None:
    """Refuse a start while the token has API_MAX_RUNNING_RUNS_PER_TOKEN runs not yet ended."""
    limit = settings.API_MAX_RUNNING_RUNS_PER_TOKEN
    if token is None or not limit:
        return
    if lock:  # serialize this token's starts (PostgreSQL; SQLite write transactions already are)
        list(ApiToken.objects.select_for_update().filter(pk=token.pk).values_list("pk"))
    running = Run.objects.filter(token=token).exclude(status__in=RUN_ENDED_STATUSES).count()
    if running >= limit:
        raise RateLimited(
            f"token: {running} of its runs have not ended, at most {limit} "
            "(API_MAX_RUNNING_RUNS_PER_TOKEN); end one with a run_status event "
            "(completed, failed or cancelled) first"
        )


@dataclass(frozen=True)
class _Asked:
    """What a start asks for, beyond its run_id: a retry must ask for the same run."""

    workflow_name: str
    enterprise_id: str
    environment: str
    definitions: Any


def _run_start_retry(
    existing: Run, *, asked: _Asked, workflow: Workflow, token: ApiToken | None
) -> StartedRun:
    """Answer a start whose run_id is taken: the same run again (a retry is idempotent), or
    ``409`` naming what differs, so a runtime never reports into a run pinned to other rules."""
    if (existing.workflow_name, existing.enterprise_id) != (
        asked.workflow_name,
        asked.enterprise_id,
    ):
        # Run ids are one namespace, so a taken id cannot read as free; the answer names
        # neither the run's workflow nor its enterprise (a scoped token learns nothing).
        raise Conflict(
            f"run_id: {existing.pk} is already taken by another run; choose another run_id",
            field="run_id",
        )
    if existing.environment != asked.environment:
        raise Conflict(
            f"environment: run {existing.pk} started in {existing.environment}, this start says "
            f"{asked.environment}; a retried start asks for the same run (or start a new run)",
            field="environment",
        )
    if asked.definitions is not None:  # none: the run took what was published at its start
        pinned = definitions_pin(workflow=workflow, definitions=asked.definitions, token=token)
        if pinned.hash != existing.definitions_hash:
            version = f" (version {existing.workflow_version})" if existing.workflow_version else ""
            raise Conflict(
                f"definitions: run {existing.pk} is pinned to sha256:{existing.definitions_hash}"
                f"{version}, this start sends sha256:{pinned.hash}; a retried start sends the "
                "definitions the run started with (or start a new run with these)",
                field="definitions",
            )
    return StartedRun(run=existing, created=False)
