"""A migrated database for a test or benchmark server, without migrating each time.

Every live test and benchmark starts from an empty, migrated database. ``manage.py migrate``
costs about 2 s a time, and a suite run does it a few dozen times. For SQLite it is done once
per set of migrations: the file is kept as a template (in the temp directory, named by a digest
of every migration the project and its installed packages have, and of the interpreter) and
copied. Any other database is migrated as before.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from devservers.processes import PROJECT, manage

SQLITE_PREFIX = "sqlite:///"
# The installed packages with migrations (settings.INSTALLED_APPS): django.contrib's apps,
# django-reversion and django-tasks-db's task table.
MIGRATING_PACKAGES = ("django", "reversion", "django_tasks_db", "django_tasks")


def database_migrate(env: dict[str, str]) -> None:
    """Bring ``env``'s ``DATABASE_URL`` to the project's migrations: a SQLite file is copied
    from the template (made once by ``manage.py migrate``); anything else is migrated."""
    url = env["DATABASE_URL"]
    if not url.startswith(SQLITE_PREFIX):
        manage(env, "migrate", "--noinput")
        return
    target = Path(url[len(SQLITE_PREFIX):])
    template = _template(env)
    shutil.copyfile(template, target)


def template_path() -> Path:
    """Where the template for today's migrations is (or will be) kept."""
    return Path(tempfile.gettempdir()) / f"contextadmin-migrated-{_migrations_digest()}.sqlite3"


def _template(env: dict[str, str]) -> Path:
    path = template_path()
    if path.exists():
        return path
    building = path.with_name(f"{path.stem}.{os.getpid()}.building")
    building.unlink(missing_ok=True)
    manage({**env, "DATABASE_URL": f"{SQLITE_PREFIX}{building}"}, "migrate", "--noinput")
    for suffix in ("-wal", "-shm"):  # the last connection closed: the WAL is checkpointed
        Path(f"{building}{suffix}").unlink(missing_ok=True)
    os.replace(building, path)  # atomic: another process sees no file or a whole one
    return path


def _migrations_digest() -> str:
    """Every migration file the database would get (the project's and its packages'), and the
    interpreter: a change to any makes a new template."""
    digest = hashlib.sha256(sys.executable.encode())
    roots = [PROJECT / "contextadmin", PROJECT / "runs"]
    for package in MIGRATING_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            roots.append(Path(spec.origin).parent)
    for root in roots:
        for migration in sorted(root.glob("**/migrations/[0-9]*.py")):
            digest.update(str(migration).encode())
            digest.update(migration.read_bytes())
    return digest.hexdigest()[:16]
