"""A database variable the runtime could not look up (no MongoDB given to ``attach``) reaches the
server only as a missing value; the run still shows it, ``unresolved`` with a reason, in the
provenance the state API, the run page's snapshot and its time travel read (docs/inspector.md)."""

from __future__ import annotations

from typing import Any

import pytest
from contextadmin_sdk.engine import build_context, context_from_supplied
from contextadmin_sdk.engine.loader import NOT_SUPPLIED_REASONS

from runs.selectors.stream import run_snapshot
from tests.runs.conftest import Api
from tests.support.demo import demo_config

pytestmark = pytest.mark.django_db
SOURCE = "db.autogen_ai_agents.Concepts.ConceptOverview"
UNRESOLVED = {
    "category": "database",
    "source": SOURCE,
    "status": "unresolved",
    "reason": NOT_SUPPLIED_REASONS["database"],
}


def runtime_values() -> dict[str, Any]:
    """What an adapter's start sends as ``context``: the values ``build_context`` built
    without MongoDB (``concept_overview`` unresolved there, so absent)."""
    built = build_context(demo_config(), workflow_name="Generator", enterprise_id="acme",
                          environ={}, mongo=None)
    assert built.provenance["concept_overview"]["status"] == "unresolved"
    return dict(built.values)


def test_a_supplied_context_without_a_database_value_keeps_it_unresolved_with_a_reason() -> None:
    values = runtime_values()
    ctx = context_from_supplied(demo_config(), values, workflow_name="Generator",
                                enterprise_id="acme")
    assert "concept_overview" not in ctx.values
    assert ctx.provenance["concept_overview"] == UNRESOLVED
    assert ctx.provenance["monetization_enabled"]["status"] == "resolved"  # supplied: as before


def test_a_supplied_context_without_an_environment_value_names_its_variable() -> None:
    config = demo_config()
    config["context_variables"]["environment_variables"].append(
        {"name": "region", "type": "string", "source": {"type": "environment",
                                                         "env_var": "REGION"}}
    )
    ctx = context_from_supplied(config, {}, workflow_name="Generator", enterprise_id="acme")
    assert ctx.provenance["region"] == {
        "category": "environment",
        "source": "REGION",
        "status": "unresolved",
        "reason": NOT_SUPPLIED_REASONS["environment"],
    }
    produced = context_from_supplied(config, {}, workflow_name="Generator",
                                     enterprise_id="acme", environment="production")
    assert produced.provenance["region"]["status"] == "suppressed"  # production's reason stays


def test_the_state_api_and_the_run_page_show_the_unresolved_database_variable(
    api: Api, admin_client: Any
) -> None:
    run_id = api.start(context=runtime_values())["run_id"]
    state = api.get(f"/api/runs/{run_id}/state/").json()
    assert "concept_overview" not in state["state"]["context"]
    assert state["provenance"]["concept_overview"] == UNRESOLVED
    snapshot = run_snapshot(run_id=run_id, after=None)  # what the run page opens with
    assert snapshot["provenance"]["concept_overview"] == UNRESOLVED
    travel = admin_client.get(f"/api/runs/{run_id}/state/?at=0")  # its time travel
    assert travel.json()["provenance"]["concept_overview"] == UNRESOLVED
