"""A run started for one workflow with another workflow's definitions (its exported
context_variables.json, or a reference to its version) is refused: a 400 naming ``definitions``
and both workflows, and nothing stored (docs/api.md "Start a run"). Over the real HTTP API of a
live Daphne, with the two demo workflows."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.demo import DEMO
from tests.support.live_server import live_server_run

pytestmark = pytest.mark.slow

RUN_FOR = "Generator"  # the workflow the runtime names
OTHER = "GeneratorChat"  # the workflow whose export it carries


@dataclass(frozen=True)
class Site:
    url: str
    token: str  # any workflow
    scoped: str  # scoped to RUN_FOR: never told another workflow's name


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A Daphne of this module's own with both demo workflows at version 1."""
    workdir = tmp_path_factory.mktemp("run-start-workflow")
    for server in live_server_run(workdir, username="mismatch"):
        server.manage("import_context", str(DEMO / "context_variables.json"), "--workflow", RUN_FOR)
        server.manage(
            "import_context", str(DEMO / "ag2_context_variables.json"), "--workflow", OTHER
        )
        token = server.manage("create_api_token", "mismatch").stdout.strip()
        scoped = server.manage(
            "create_api_token", "mismatch-scoped", "--workflow", RUN_FOR
        ).stdout.strip()
        yield Site(server.url, token, scoped)


def call(site: Site, path: str, body: Any = None, *, token: str = "") -> tuple[int, Any]:
    """One request to the API: its status and its JSON."""
    request = urllib.request.Request(  # noqa: S310  (loopback test server)
        site.url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {token or site.token}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def exported(site: Site, workflow: str, environment: str) -> dict[str, Any]:
    """What a deployment pipeline ships for ``workflow``: the export as served."""
    query = urllib.parse.urlencode({"environment": environment})
    status, document = call(site, f"/api/workflows/{workflow}/context_variables.json?{query}")
    assert status == 200
    return dict(document)


def start(
    site: Site, workflow: str, run_id: str, definitions: Any, *, token: str = "", **body: Any
) -> tuple[int, Any]:
    """``POST /api/runs/``: a run of ``workflow`` carrying ``definitions``."""
    body = {"workflow": workflow, "enterprise_id": "acme", "run_id": run_id, **body}
    return call(site, "/api/runs/", {**body, "definitions": definitions}, token=token)


def refusal(digest: str) -> str:
    return (
        f"definitions: are version 1 of workflow {OTHER!r} ({digest}), but the run is for "
        f"workflow {RUN_FOR!r}; send the context_variables.json of {RUN_FOR!r}, or start the "
        "run as the workflow the definitions belong to"
    )


@pytest.mark.parametrize("environment", ["development", "production"])
def test_another_workflows_export_is_refused_naming_both_and_nothing_is_stored(
    site: Site, environment: str
) -> None:
    shipped = exported(site, OTHER, environment)
    digest = shipped["version"]["digest"]
    run_id = f"mismatch-{environment}"
    status, answer = start(site, RUN_FOR, run_id, shipped, environment=environment)
    assert (status, answer) == (400, {"error": refusal(digest), "field": "definitions"})
    assert call(site, f"/api/runs/{run_id}/state/")[0] == 404  # nothing stored
    # A reference to that version is the same mistake.
    reference = {"version": 1, "digest": digest}
    assert start(site, RUN_FOR, run_id, reference, environment=environment)[1] == answer
    assert call(site, f"/api/runs/{run_id}/state/")[0] == 404
    # The same definitions start a run of their own workflow, pinned to its version.
    status, started = start(site, OTHER, run_id, shipped, environment=environment)
    assert status == 201 and started["state"]["workflow_version"] == 1


def test_a_token_scoped_to_the_runs_workflow_is_not_told_the_others_name(site: Site) -> None:
    shipped = exported(site, OTHER, "development")
    status, answer = start(site, RUN_FOR, "mismatch-scoped", shipped, token=site.scoped)
    assert status == 400 and answer["field"] == "definitions"
    assert answer["error"].startswith("definitions: are another workflow's (sha256:")
    assert OTHER not in answer["error"]
    assert f"but the run is for workflow {RUN_FOR!r}" in answer["error"]


def test_an_edited_copy_of_another_workflows_export_is_kept_as_not_published_here(
    site: Site,
) -> None:
    """Definitions name no workflow (docs/format.md): only their digest says whose they are,
    so an edited copy is the runtime's own definitions, as any local edit."""
    edited = exported(site, OTHER, "development")
    edited["context_variables"]["declarative_variables"][0]["description"] = "edited"
    status, started = start(site, RUN_FOR, "mismatch-edited", edited)
    assert status == 201
    assert started["state"]["definitions"]["source"] == "runtime"


def test_empty_definitions_are_nobodys(site: Site) -> None:
    """Definitions with no variable, hand-off or mapping identify no workflow."""
    status, started = start(site, RUN_FOR, "mismatch-empty", {"context_variables": {}})
    assert status == 201, started
