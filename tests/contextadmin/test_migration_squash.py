"""The squashed migrations (docs/deploy.md, Upgrading): a fresh database gets them, a database
that applied every migration they replace has nothing to do, and one part-way through them is
refused by ``manage.py migrate`` with what to do, untouched.

Each test has its own SQLite file, never the test database: a fresh one is migrated by
``manage.py migrate`` in a subprocess (django-tasks-db's data migration queries the default
database), the others start as a copy of devservers' migrated template and are migrated in
this process through a second connection alias."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import DEFAULT_DB_ALIAS, connections
from pytest_django import DjangoDbBlocker

from devservers import migrated
from devservers.processes import manage, server_env
from runs import db

ALIAS = "squash_test"
SQUASHES = {
    "contextadmin": (
        "0001_squashed_0004_output_mappings",
        ["0001_initial", "0002_trigger_type_labels", "0003_versions", "0004_output_mappings"],
    ),
    "runs": (
        "0001_squashed_0005_run_list_indexes",
        [
            "0001_initial",
            "0002_run_workflow_version",
            "0003_run_paused_runtime",
            "0004_run_definitions_source",
            "0005_run_list_indexes",
        ],
    ),
}

DELETE = "DELETE FROM django_migrations WHERE app = %s AND name = %s"


@pytest.fixture
def database(
    tmp_path: Path, django_db_blocker: DjangoDbBlocker
) -> Iterator[str]:
    """A connection alias to a migrated SQLite file of its own."""
    name = str(tmp_path / "squash.sqlite3")
    migrated.database_migrate(server_env(f"sqlite:///{name}"))
    own = {"ENGINE": "django.db.backends.sqlite3", "NAME": name}
    configured = connections.configure_settings(
        {DEFAULT_DB_ALIAS: connections.settings[DEFAULT_DB_ALIAS], ALIAS: own}
    )
    connections.settings[ALIAS] = configured[ALIAS]
    with django_db_blocker.unblock():
        yield ALIAS
        connections[ALIAS].close()
    del connections[ALIAS]
    del connections.settings[ALIAS]
    holder = db._wal_holders.pop(name, None)  # runs.db keeps one per SQLite file
    if holder is not None:
        holder.close()


def migrate(alias: str) -> str:
    out = StringIO()
    # skip_checks=False: as `manage.py migrate` (call_command skips the checks by default)
    call_command("migrate", database=alias, interactive=False, skip_checks=False, stdout=out)
    return out.getvalue()


def show(alias: str) -> str:
    out = StringIO()
    call_command("showmigrations", "contextadmin", "runs", "webhooks", database=alias, stdout=out)
    return out.getvalue()


def recorded(alias: str) -> set[tuple[str, str]]:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations")
        return set(cursor.fetchall())


def execute(alias: str, sql: str, params: list[object]) -> None:
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)


def record_old_chain_only(alias: str, *, drop: dict[str, list[str]]) -> None:
    """What a database migrated by the previous release holds: the replaced names, no squash
    (less the ``drop`` ones: a database part-way through the previous release's migrations)."""
    for app, (squash, replaced) in SQUASHES.items():
        execute(alias, DELETE, [app, squash])
        for name in drop.get(app, []):
            assert name in replaced
            execute(
                alias, "DELETE FROM django_migrations WHERE app = %s AND name = %s", [app, name]
            )


def test_a_fresh_database_gets_the_squashed_migrations(tmp_path: Path) -> None:
    env = server_env(f"sqlite:///{tmp_path / 'fresh.sqlite3'}")
    out = manage(env, "migrate", "--noinput").stdout
    assert "Applying contextadmin.0001_squashed_0004_output_mappings... OK" in out
    assert "Applying runs.0001_squashed_0005_run_list_indexes... OK" in out
    listed = manage(env, "showmigrations", "contextadmin", "runs", "webhooks").stdout
    assert "[X] 0001_squashed_0004_output_mappings (4 squashed migrations)" in listed
    assert "[X] 0001_squashed_0005_run_list_indexes (5 squashed migrations)" in listed
    assert "[ ]" not in listed
    # Django records the replaced names too: the previous release would see them applied
    with sqlite3.connect(tmp_path / "fresh.sqlite3") as fresh:
        names = set(fresh.execute("SELECT app, name FROM django_migrations"))
    for app, (squash, replaced) in SQUASHES.items():
        assert {(app, squash)} | {(app, name) for name in replaced} <= names


def test_a_database_at_the_previous_release_has_nothing_to_migrate(database: str) -> None:
    record_old_chain_only(database, drop={})
    execute(
        database,
        "INSERT INTO contextadmin_workflow (name, description, database_name, "
        "created, updated) VALUES ('Kept', '', '', '2026-01-01', '2026-01-01')",
        [],
    )

    # all the replaced ones applied: Django counts the squash as applied, not yet recorded
    listed = show(database)
    assert "[-] 0001_squashed_0004_output_mappings (4 squashed migrations)" in listed
    assert "[-] 0001_squashed_0005_run_list_indexes (5 squashed migrations)" in listed
    out = migrate(database)
    assert "No migrations to apply." in out
    assert "Applying" not in out
    listed = show(database)
    assert "[X] 0001_squashed_0004_output_mappings (4 squashed migrations)" in listed
    assert "[X] 0001_squashed_0005_run_list_indexes (5 squashed migrations)" in listed
    with connections[database].cursor() as cursor:
        cursor.execute("SELECT name FROM contextadmin_workflow")
        assert cursor.fetchall() == [("Kept",)]


def test_a_database_part_way_through_the_previous_release_is_refused_untouched(
    database: str,
) -> None:
    record_old_chain_only(
        database, drop={"runs": ["0004_run_definitions_source", "0005_run_list_indexes"]}
    )
    execute(
        database,
        "INSERT INTO contextadmin_workflow (name, description, database_name, "
        "created, updated) VALUES ('Kept', '', '', '2026-01-01', '2026-01-01')",
        [],
    )
    before = recorded(database)

    with pytest.raises(SystemCheckError) as refused:
        migrate(database)

    message = str(refused.value)
    assert "(contextadmin.E001)" in message
    assert (
        "The 'squash_test' database is part-way through the 'runs' migrations this release "
        "squashed: it has 0001_initial, 0002_run_workflow_version, 0003_run_paused_runtime but "
        "not 0004_run_definitions_source, 0005_run_list_indexes; this release cannot upgrade it."
    ) in message
    assert (
        "Migrate it with the previous release first (up to runs 0005_run_list_indexes), then "
        "with this one (docs/deploy.md, Upgrading)."
    ) in message
    assert "'contextadmin' migrations" not in message  # that app's chain is whole
    assert recorded(database) == before
    with connections[database].cursor() as cursor:
        cursor.execute("SELECT name FROM contextadmin_workflow")
        assert cursor.fetchall() == [("Kept",)]


def test_every_model_change_has_its_migration(db: None) -> None:
    """A model edited without ``makemigrations`` (the webhook URL's URLField → CharField, say)
    would leave deployments with a schema the code does not describe."""
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exited:  # --check exits 1 when a migration is missing
        pytest.fail(f"a model change has no migration: {out.getvalue()} (exit {exited.code})")


def test_versions_stored_before_the_digest_indexes_get_their_production_digest(
    database: str,
) -> None:
    """contextadmin 0002: a run start finds a production export by its stored digest, so every
    version an older release stored gets it at upgrade."""
    call_command(
        "migrate", "contextadmin", "0001_squashed_0004_output_mappings",
        database=database, interactive=False, stdout=(back := StringIO()),
    )
    assert "Unapplying contextadmin.0002_version_digest_indexes... OK" in back.getvalue()
    execute(
        database,
        "INSERT INTO contextadmin_workflow (name, description, database_name, "
        "created, updated) VALUES ('Kept', '', '', '2026-01-01', '2026-01-01')",
        [],
    )
    execute(
        database,
        "INSERT INTO contextadmin_workflowversion (workflow_id, number, action, author_name,"
        " created, comment, export, export_production, digest, approved_by_name, approval_comment) "
        "SELECT id, 1, 'import', '', '2026-01-01', '', '{\"a\": 1}', '{\"p\": 1}', 'd', '', '' "
        "FROM contextadmin_workflow WHERE name = 'Kept'",
        [],
    )

    out = migrate(database)

    assert "Applying contextadmin.0002_version_digest_indexes... OK" in out
    with connections[database].cursor() as cursor:
        cursor.execute("SELECT digest, digest_production FROM contextadmin_workflowversion")
        assert cursor.fetchall() == [("d", hashlib.sha256(b'{"p": 1}').hexdigest())]
