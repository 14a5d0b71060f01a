"""Prepare a fresh install for the demo: the Generator workflow, an operator, MongoDB documents."""

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from contextadmin.models import Workflow
from contextadmin.services import mongo_documents_seed, superuser_ensure, workflow_import

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"


class Command(BaseCommand):
    help = (
        "Import the demo workflow Generator when there are no workflows, create the first "
        "superuser, and seed MongoDB (settings.MONGODB_URI) with the demo documents."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if Workflow.objects.exists():
            self.stdout.write("demo_setup: workflows exist; demo workflow not imported")
        else:
            data = (DEMO_DIR / "context_variables.json").read_bytes()
            result = workflow_import(name="Generator", data=data)
            self.stdout.write(f"demo_setup: imported workflow Generator ({result.diff.summary()})")

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
        else:
            self.stdout.write(f"demo_setup: {user.note}")

        if not settings.MONGODB_URI:
            self.stdout.write("demo_setup: MONGODB_URI unset; MongoDB not seeded")
            return
        documents = json.loads((DEMO_DIR / "mongo_documents.json").read_text(encoding="utf-8"))
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
