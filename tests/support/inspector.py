"""An operator about to watch a run: the demo workflow imported, a staff user logged in (the
session key an inspector socket's cookie carries) and a run of it started."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client

from contextadmin.services import workflow_import
from runs.services.lifecycle import run_start
from tests.support.demo import demo_config


def watched_run(*, username: str = "op") -> tuple[str, str]:
    """Return (the staff user's session key, the run's id)."""
    workflow_import(name="Generator", data=demo_config())
    user = get_user_model().objects.create_user(username, password="pw-12345678", is_staff=True)
    client = Client()
    client.force_login(user)
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    return client.cookies["sessionid"].value, run.pk
