"""Code run *inside* a test server's environment (``manage.py shell -c``), printing JSON.

``seed()`` prepares a fresh database: migrations, the demo workflow, a runtime token and a staff
session. ``dump(run_id)`` prints a run's log and whether replaying the whole log from its
first snapshot rebuilds exactly the live state.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "contextadmin" / "demo" / "context_variables.json"


def seed() -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from contextadmin.services import workflow_import
    from runs.services.tokens import api_token_create

    call_command("migrate", verbosity=0, interactive=False)
    workflow_import(name="Generator", data=DEMO.read_bytes())
    _, secret = api_token_create(name="reliability")
    user = get_user_model().objects.create_user(
        "operator", password=secrets.token_urlsafe(16), is_staff=True
    )
    client = Client()
    client.force_login(user)
    print(json.dumps({"secret": secret, "session": client.cookies["sessionid"].value}))


def dump(run_id: str) -> None:
    from runs.engine import RunState
    from runs.models import Run, RunEvent, RunSnapshot
    from runs.services.caches import run_config

    run = Run.objects.get(pk=run_id)
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "payload"))
    first = RunSnapshot.objects.get(run=run, seq=0)
    state = RunState.from_dict(run_config(run), first.state)
    for _, payload in events:
        state.apply(payload)
    print(
        json.dumps(
            {
                "last_seq": run.last_seq,
                "events": events,
                "replayed_equals_live": state.to_dict() == run.state,
                "live": run.state,
            }
        )
    )
