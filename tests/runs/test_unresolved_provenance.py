"""A database variable the runtime could not look up (no MongoDB given to ``attach``) reaches the
server as a missing value, with the runtime's reason in ``unresolved`` when it sends one; the
run still shows it, ``unresolved`` with that reason (or a general one), in the provenance the
state API, the run page's snapshot and its time travel read (docs/inspector.md)."""

from __future__ import annotations

from typing import Any

import pytest
from contextadmin_sdk.engine import ContextError, build_context, context_from_supplied
from contextadmin_sdk.engine.format import UNRESOLVED_REASON_MAX_CHARS
from contextadmin_sdk.engine.loader import NOT_SUPPLIED_REASONS

from runs.models import Run
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


def test_the_runtimes_own_reason_is_shown_where_it_sends_one() -> None:
    built = build_context(demo_config(), workflow_name="Generator", enterprise_id="acme",
                          environ={}, mongo=None)
    assert built.unresolved_reasons() == {"concept_overview": "no MongoDB configured"}
    ctx = context_from_supplied(demo_config(), dict(built.values), workflow_name="Generator",
                                enterprise_id="acme", unresolved=built.unresolved_reasons())
    assert ctx.provenance["concept_overview"] == {
        **UNRESOLVED, "reason": "the runtime could not read it: no MongoDB configured",
    }


@pytest.mark.parametrize(
    ("unresolved", "problem"),
    [
        ({"monetization_enabled": "x"}, "unresolved.monetization_enabled: the context supplies"),
        ({"interview_complete": "x"}, "unresolved.interview_complete: not a database or "),
        ({"nobody": "x"}, "unresolved.nobody: not a database or environment variable here"),
        ({"concept_overview": ""}, "unresolved.concept_overview: must be a non-empty string"),
        ({"concept_overview": 7}, "unresolved.concept_overview: must be a non-empty string"),
        ({"concept_overview": "x" * (UNRESOLVED_REASON_MAX_CHARS + 1)},
         f"unresolved.concept_overview: {UNRESOLVED_REASON_MAX_CHARS + 1} characters, at most"),
    ],
)
def test_a_reason_for_a_name_the_runtime_did_read_or_does_not_have_is_refused(
    unresolved: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ContextError) as refused:
        context_from_supplied(demo_config(), runtime_values(), workflow_name="Generator",
                              enterprise_id="acme", unresolved=unresolved)
    assert refused.value.problems[0].startswith(problem)


def test_a_reason_that_looks_like_a_credential_is_redacted() -> None:
    reason = "MongoDB unreachable: mongodb://app:s3cr3t-Pa55w0rd@db.internal:27017"
    ctx = context_from_supplied(demo_config(), runtime_values(), workflow_name="Generator",
                                enterprise_id="acme", unresolved={"concept_overview": reason})
    shown = ctx.provenance["concept_overview"]["reason"]
    assert shown.startswith("the runtime could not read it: ")
    assert "s3cr3t" not in shown


def test_the_start_api_stores_the_runtimes_reason_and_refuses_a_bad_one_storing_nothing(
    api: Api,
) -> None:
    reason = "MongoDB unreachable: timed out after 2000 ms"
    run_id = api.start(context=runtime_values(),
                       unresolved={"concept_overview": reason})["run_id"]
    state = api.get(f"/api/runs/{run_id}/state/").json()
    assert state["provenance"]["concept_overview"]["reason"] == (
        f"the runtime could not read it: {reason}"
    )
    before = Run.objects.count()
    for body, field in [
        ({"context": runtime_values(), "unresolved": {"nobody": "x"}}, "unresolved.nobody"),
        ({"context": runtime_values(), "unresolved": ["concept_overview"]}, "unresolved:"),
        ({"unresolved": {"concept_overview": reason}}, "unresolved: goes with context"),
    ]:
        answer = api.post("/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", **body})
        assert answer.status_code == 400, body
        assert answer.json()["error"].startswith(field), answer.json()
    assert Run.objects.count() == before


def test_a_reason_holding_one_of_this_servers_api_tokens_is_redacted(
    api: Api, token_secret: str
) -> None:
    """A token the server made (create_api_token) is a credential wherever a run carries it."""
    reason = f"auth failed token={token_secret}"
    run_id = api.start(context=runtime_values(), unresolved={"concept_overview": reason})["run_id"]
    shown = api.get(f"/api/runs/{run_id}/state/").json()["provenance"]["concept_overview"]
    assert token_secret not in shown["reason"]
    assert "contextadmin API token" in shown["reason"]


def test_in_production_a_reason_for_an_environment_variable_is_refused() -> None:
    """A production run never reads environment variables: a reason for one would be dropped
    without a word, so it is refused, naming the variable."""
    config = demo_config()
    config["context_variables"]["environment_variables"].append(
        {"name": "region", "type": "string", "source": {"type": "environment",
                                                         "env_var": "REGION"}}
    )
    with pytest.raises(ContextError) as refused:
        context_from_supplied(config, {}, workflow_name="Generator", enterprise_id="acme",
                              environment="production", unresolved={"region": "unset"})
    assert refused.value.problems == [
        "unresolved.region: suppressed in production: a production run never reads it"
    ]
