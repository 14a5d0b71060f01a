"""Prepare a fresh install for the demo: the demo workflows, an operator, MongoDB documents."""

import json
import os
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from contextadmin.demo import MONGO_DOCUMENTS_PATH, demo_workflows_complete
from contextadmin.services import mongo_documents_seed, superuser_ensure


class Command(BaseCommand):
    help = (
        "Import the demo workflows (Generator; GeneratorChat, with hand-offs) that a database "
        "holding no workflows of its own lacks, create the first superuser, and seed MongoDB "
        "(settings.MONGODB_URI) with the demo documents. Safe to run on every start."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        imported = demo_workflows_complete()
        if imported is None:
            self.stdout.write("demo_setup: your own workflows exist; demo workflows not imported")
        elif not imported:
            self.stdout.write("demo_setup: the demo workflows exist; nothing imported")
        for done in imported or []:
            self.stdout.write(f"demo_setup: imported workflow {done.name} ({done.summary})")

        user = superuser_ensure(
            username=os.environ.get("DJANGO_SUPERUSER_USERNAME"),
            password=os.environ.get("DJANGO_SUPERUSER_PASSWORD"),
        )
        if user.password:
            self.stdout.write(
                f"demo_setup: created superuser {user.username} with password {user.password} "
                "(shown once: change it in the admin)"
            )
        elif user.created:
            self.stdout.write(f"demo_setup: created superuser {user.username}")
        else:  # who to log in as (scripts/run repeats it, with how to reset a lost login)
            login = user.username or first_superuser()
            self.stdout.write(
                f"demo_setup: {user.note}" + (f" (log in as {login})" if login else "")
            )

        if not settings.MONGODB_URI:
            self.stdout.write("demo_setup: MONGODB_URI unset; MongoDB not seeded")
            return
        documents = json.loads(MONGO_DOCUMENTS_PATH.read_text(encoding="utf-8"))
        seeded = mongo_documents_seed(
            uri=settings.MONGODB_URI, documents=documents, timeout_ms=2000
        )
        if not seeded.reachable:
            self.stdout.write(f"demo_setup: note: {seeded.note}; MongoDB not seeded")
            return
        for label in seeded.seeded:
            self.stdout.write(f"demo_setup: seeded MongoDB {label}")
        for label in seeded.skipped:
            self.stdout.write(f"demo_setup: MongoDB {label} not empty; left as is")


def first_superuser() -> str:
    """The username of the oldest superuser ("" when there is none)."""
    users = get_user_model().objects.filter(is_superuser=True, is_active=True).order_by("pk")
    return str(users.values_list("username", flat=True).first() or "")
