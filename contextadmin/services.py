"""Writes: import a ``context_variables.json``, admin save helpers, demo setup."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat

from contextadmin import specs
from contextadmin.models import Handoff, Trigger, Variable, Workflow, workflow_name_validator
from contextadmin.selectors import ConfigDiff, workflow_diff, workflow_has_definitions
from runs.engine import format as fmt


class ImportRefused(Exception):
    """An import that is valid as a file but may not be applied as asked."""


@dataclass(frozen=True)
class ImportResult:
    warnings: list[str]
    diff: ConfigDiff
    created: bool


@transaction.atomic
def workflow_import(
    *,
    name: str,
    data: bytes | str | Mapping[str, Any],
    replace: bool = False,
    dry_run: bool = False,
) -> ImportResult:
    """Make a ``context_variables.json`` the definitions of a workflow, all or nothing.

    Raises ``ConfigError`` (JSON paths) for a file that breaks the format and ``ImportRefused``
    for a bad workflow name or, without ``replace``, a workflow that already has definitions.
    A dry run validates and diffs exactly like the real import but writes nothing.
    """
    try:
        workflow_name_validator(name)
    except ValidationError:
        raise ImportRefused(
            f"workflow name {name!r} is invalid: start with a letter, then up to 99 letters, "
            "digits, _ or -"
        ) from None
    parsed = fmt.parse_config(data)
    workflow = Workflow.objects.select_for_update().filter(name=name).first()
    diff = workflow_diff(workflow=workflow, config=parsed.config)
    if workflow is not None and not replace and workflow_has_definitions(workflow=workflow):
        raise ImportRefused(
            f"workflow {name} already has definitions; importing replaces all of them: "
            "re-run with --replace (add --dry-run first to preview the diff)"
        )
    result = ImportResult(warnings=parsed.warnings, diff=diff, created=workflow is None)
    if dry_run:
        return result
    database_name = parsed.config.context_variables.database_name or ""
    if workflow is None:
        workflow = Workflow.objects.create(name=name, database_name=database_name)
    else:
        workflow.database_name = database_name
        workflow.save(update_fields=["database_name", "updated"])
        workflow.handoffs.all().delete()
        workflow.variables.all().delete()
    _definitions_create(workflow=workflow, config=parsed.config)
    return result


def _definitions_create(*, workflow: Workflow, config: fmt.ContextVariablesFile) -> None:
    variables, handoffs = specs.rows_from_config(workflow=workflow, config=config)
    created = Variable.objects.bulk_create([variable for variable, _ in variables], batch_size=500)
    triggers = []
    for saved, (_, rows) in zip(created, variables, strict=True):
        for trigger in rows:
            trigger.variable = saved
            triggers.append(trigger)
    Trigger.objects.bulk_create(triggers, batch_size=500)
    Handoff.objects.bulk_create(handoffs, batch_size=500)


@transaction.atomic
def variable_names_release(*, workflow: Workflow, variable_ids: Iterable[int]) -> None:
    """Rename variables about to be renamed or deleted to placeholders, freeing their names.

    The admin saves one category at a time; without this, swapping two names or moving a name
    to another category would trip the unique (workflow, name) constraint half-way.
    """
    ids = list(variable_ids)
    if ids:
        Variable.objects.filter(workflow=workflow, pk__in=ids).update(
            name=Concat(Value("~"), Cast("pk", output_field=CharField()))
        )


# -- demo -------------------------------------------------------------------------------------
@dataclass
class SuperuserResult:
    username: str
    password: str | None = None  # set only when generated here, to be shown once
    created: bool = False
    note: str = ""


@transaction.atomic
def superuser_ensure(
    *, username: str | None = None, password: str | None = None
) -> SuperuserResult:
    """Create the first operator: the given one, or ``admin`` with a generated password.

    With a username and password, create that superuser unless the username exists. Without,
    create ``admin`` only when there is no superuser at all.
    """
    User = get_user_model()
    if username and password:
        if User.objects.filter(username=username).exists():
            return SuperuserResult(username, note=f"user {username} exists: left unchanged")
        User.objects.create_superuser(username=username, email="", password=password)
        return SuperuserResult(username, created=True)
    if User.objects.filter(is_superuser=True).exists():
        return SuperuserResult("", note="a superuser exists: none created")
    if User.objects.filter(username="admin").exists():
        return SuperuserResult(
            "admin", note="user admin exists but is not a superuser: none created"
        )
    generated = secrets.token_urlsafe(12)
    User.objects.create_superuser(username="admin", email="", password=generated)
    return SuperuserResult("admin", password=generated, created=True)


@dataclass
class MongoSeedResult:
    reachable: bool
    seeded: list[str] = field(default_factory=list)  # "database.collection (N documents)"
    skipped: list[str] = field(default_factory=list)  # not empty already
    note: str = ""


def mongo_documents_seed(
    *, uri: str, documents: Mapping[str, Mapping[str, list[dict[str, Any]]]], timeout_ms: int = 2000
) -> MongoSeedResult:
    """Insert demo documents into each empty collection of a MongoDB (never raises on outage)."""
    import pymongo
    from pymongo.errors import PyMongoError

    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        uri,
        serverSelectionTimeoutMS=timeout_ms,
        connectTimeoutMS=timeout_ms,
        socketTimeoutMS=timeout_ms,
    )
    try:
        client.admin.command("ping")
        result = MongoSeedResult(reachable=True)
        for database, collections in documents.items():
            for collection, rows in collections.items():
                target = client[database][collection]
                label = f"{database}.{collection}"
                if target.find_one() is not None:
                    result.skipped.append(label)
                    continue
                if rows:
                    target.insert_many([dict(row) for row in rows])
                result.seeded.append(f"{label} ({len(rows)} documents)")
        return result
    except PyMongoError as exc:
        return MongoSeedResult(reachable=False, note=f"MongoDB unreachable: {exc}")
    finally:
        client.close()
