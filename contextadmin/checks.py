"""Checks of the stored data that ``manage.py migrate`` runs first (``Tags.database``).

``published_definitions_check``: a published version this release's format refuses (a rule
made stricter since it was saved) warns at upgrade, naming the workflows and what to fix,
instead of surfacing as runs refused with a 409.

``squashed_migrations_check`` refuses a database part-way through a squashed chain of
migrations (docs/deploy.md, Upgrading).

A squashed migration runs on a database that has none of the migrations it replaces and counts
as applied on one that has them all. With the replaced files deleted, Django cannot bring a
database holding only some of them further (``migrate`` fails on a half-built model), so this
check, which ``manage.py migrate`` runs first (``Tags.database``), stops it with what to do.

The replaced names are read from the squashed migrations themselves (their ``replaces``), so
the rule covers ``contextadmin``'s and ``runs``' squashes, and any later one, without a list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from contextadmin_sdk.engine import format as fmt
from django.core import checks
from django.core.checks import Error
from django.db import DatabaseError, connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from contextadmin.models import Workflow

PART_WAY = "contextadmin.E001"
UNPARSABLE = "contextadmin.W002"


def published_definitions_check(
    *, databases: Iterable[str] | None = None, **kwargs: Any
) -> list[checks.Warning]:
    """A warning for each workflow whose published definitions this release refuses."""
    if not databases:
        return []
    warnings = []
    for alias in databases:
        try:
            published = list(
                Workflow.objects.using(alias)
                .exclude(published_version=None)
                .values_list("name", "published_version__number", "published_version__export")
            )
        except DatabaseError:  # not migrated yet: nothing published to check
            continue
        for name, number, export in published:
            try:
                fmt.parse_config(export)
            except fmt.ConfigError as exc:
                warnings.append(
                    checks.Warning(
                        f"Workflow {name!r}: its published version {number} breaks a rule of "
                        f"this release ({exc.issues[0]}); runs of it are refused until it is "
                        "fixed.",
                        hint=(
                            f"Open {name} in the admin, fix the field its page points at, and "
                            "save (and approve, with review on): that publishes a new version."
                        ),
                        id=UNPARSABLE,
                    )
                )
    return warnings


def squashed_migrations_check(
    *, databases: Iterable[str] | None = None, **kwargs: Any
) -> list[Error]:
    """An error for each squashed migration a database has some, not all, replaced names of."""
    if not databases:  # only the checks that may query a database (migrate's) pass them
        return []
    squashes = MigrationLoader(None, ignore_no_migrations=True).replacements
    errors = []
    for alias in databases:
        recorder = MigrationRecorder(connections[alias])
        if not recorder.has_table():  # a fresh database
            continue
        applied = recorder.applied_migrations()
        for (app, name), migration in sorted(squashes.items()):
            recorded = [key for key in migration.replaces if key in applied]
            if (app, name) in applied or len(recorded) in (0, len(migration.replaces)):
                continue
            missing = [key for key in migration.replaces if key not in applied]
            errors.append(_part_way_error(alias=alias, app=app, recorded=recorded, missing=missing))
    return errors


def _part_way_error(
    *, alias: str, app: str, recorded: list[tuple[str, str]], missing: list[tuple[str, str]]
) -> Error:
    last = missing[-1][1]
    return Error(
        f"The {alias!r} database is part-way through the {app!r} migrations this release "
        f"squashed: it has {_names(recorded)} but not {_names(missing)}; this release cannot "
        "upgrade it.",
        hint=(
            f"Migrate it with the previous release first (up to {app} {last}), then with this "
            "one (docs/deploy.md, Upgrading)."
        ),
        id=PART_WAY,
    )


def _names(keys: list[tuple[str, str]]) -> str:
    return ", ".join(name for _, name in keys)
