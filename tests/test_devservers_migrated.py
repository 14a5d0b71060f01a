"""devservers.migrated: a live server's SQLite database is a copy of a template migrated once,
and it is as migrated as ``manage.py migrate`` would leave it."""

from __future__ import annotations

from pathlib import Path

import pytest

from devservers import migrated
from devservers.processes import manage, server_env


@pytest.mark.slow
def test_a_copied_database_has_every_migration_and_the_template_is_made_once(
    tmp_path: Path,
) -> None:
    first, second = (server_env(f"sqlite:///{tmp_path / name}") for name in ("a.db", "b.db"))
    migrated.database_migrate(first)
    template = migrated.template_path()
    made = template.stat().st_mtime_ns
    migrated.database_migrate(second)
    assert template.stat().st_mtime_ns == made  # copied, not migrated again
    for env in (first, second):
        # `migrate --check` exits non-zero while any migration is unapplied
        assert manage(env, "migrate", "--check", check=False).returncode == 0
        listed = manage(env, "showmigrations", "--list").stdout
        assert "[ ]" not in listed and "[X] 0001_initial" in listed


def test_the_template_follows_the_installed_packages_migrations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The template's name covers the packages' migrations too, not only the project's."""
    before = migrated.template_path()
    monkeypatch.setattr(migrated, "MIGRATING_PACKAGES", ())
    assert migrated.template_path() != before
