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
    from runs.tokens import api_token_create

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
    """The run's log, and whether replaying all of it gives the server's latest state and
    replaying it up to the stored state's seq gives the stored state (ingest stores the state
    only now and then: runs/services/ingest.py)."""
    from contextadmin_sdk.engine import RunState

    from runs.models import Run, RunEvent, RunSnapshot
    from runs.state import run_config, run_state_at, stored_state_seq

    run = Run.objects.get(pk=run_id)
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "payload"))
    first = RunSnapshot.objects.get(run=run, seq=0)
    state = RunState.from_dict(run_config(run), first.state)
    stored_seq = stored_state_seq(run.state)
    stored_matches = stored_seq == 0 and first.state == run.state
    for seq, payload in events:
        state.apply(payload)
        if seq == stored_seq:
            stored_matches = state.to_dict() == run.state
    latest = run_state_at(run=run).state
    print(
        json.dumps(
            {
                "last_seq": run.last_seq,
                "events": events,
                "replayed_equals_live": state.to_dict() == latest and stored_matches,
                "live": latest,
            }
        )
    )
