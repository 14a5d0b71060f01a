"""The ship path as a platform team drives it: a token from the command line, the export over
real HTTP, the commands a CI job runs. Each test is a defect found on a day of use."""

from __future__ import annotations

import io
import json
import re
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from contextadmin.models import Workflow, WorkflowVersion
from devservers.processes import manage
from runs.models import ApiToken
from tests.contextadmin.conftest import EXAMPLE_PATH, db_dump
from tests.support.live_server import LiveServer

NOT_UTF8 = b"G\xff".decode("utf-8", "surrogateescape")  # what Python makes of such an argv


def http_get(*, url: str, token: str) -> tuple[int, bytes]:
    """GET as a pipeline does (Bearer token); the status and body, errors included."""
    headers = {"Authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (loopback http)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture
def shipped(daphne_server: LiveServer) -> tuple[str, str]:
    """A workflow of its own on the shared live server, and a token scoped to it."""
    name = f"Ship{uuid.uuid4().hex[:8]}"
    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", name)
    secret = daphne_server.manage(
        "create_api_token", f"deploy-{name}", "--workflow", name
    ).stdout.strip()
    return name, secret


def test_a_non_ascii_digit_version_is_a_json_404_not_a_500(
    daphne_server: LiveServer, shipped: tuple[str, str]
) -> None:
    """``?version=²`` passed str.isdigit() and crashed int(): an HTML 500 with a traceback
    for the pipeline, and a traceback from export_context and impact_context."""
    name, secret = shipped
    url = f"{daphne_server.url}/api/workflows/{name}/context_variables.json"
    status, body = http_get(url=f"{url}?version=%C2%B2", token=secret)
    assert status == 404
    assert json.loads(body) == {
        "error": "version: expected a version number, 'draft' or 'published', got '²'",
        "field": "version",
    }
    assert http_get(url=f"{url}?version=1", token=secret)[0] == 200  # ASCII digits still work
    for command in ("export_context", "impact_context"):
        done = manage(daphne_server.env, command, name, "--version", "²", check=False)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert "version: expected a version number" in done.stderr


@pytest.mark.django_db
def test_create_api_token_with_an_empty_workflow_is_refused_not_unscoped(
    generator: Workflow,
) -> None:
    """``--workflow "$WORKFLOW"`` with the variable unset made a token that reads every
    workflow, while the pipeline meant one scoped to a single workflow."""
    with pytest.raises(CommandError, match=r"--workflow: no workflow named ''"):
        call_command("create_api_token", "deploy", "--workflow", "", stdout=io.StringIO())
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("export_context", NOT_UTF8), "no workflow named 'G\\udcff'"),
        (("impact_context", NOT_UTF8), "no workflow named 'G\\udcff'"),
        (("create_api_token", "t", "--workflow", NOT_UTF8), "--workflow: no workflow named"),
        (("revoke_api_token", NOT_UTF8), "no API token named 'G\\udcff'"),
        (("import_context", str(EXAMPLE_PATH), "--workflow", NOT_UTF8), "workflow name"),
        (
            ("import_context", str(EXAMPLE_PATH), "--workflow", "Generator", "--replace",
             "--comment", f"release {NOT_UTF8}"),
            "comment: contains a lone surrogate",
        ),
    ],
    ids=["export", "impact", "token", "revoke", "import-name", "import-comment"],
)
def test_non_utf8_arguments_are_a_command_error_not_a_traceback(
    generator: Workflow, args: tuple[str, ...], message: str
) -> None:
    """A name or ``--comment "$(git log -1 --format=%s)"`` of non-UTF-8 bytes reached the
    database and ended in UnicodeEncodeError (a traceback); now exit 1 naming the argument,
    and nothing changed."""
    before = db_dump()
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command(*args, stdout=io.StringIO(), stderr=io.StringIO())
    assert db_dump() == before
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
def test_a_dry_run_fails_where_the_import_would_be_refused(
    settings: Any, generator: Workflow, tmp_path: Path, example: dict[str, Any]
) -> None:
    """A CI gate ran ``import_context --dry-run`` (exit 0), then the import itself was
    refused: a draft awaits review and the job lacks CONTEXTADMIN_REVIEW=on."""
    example["context_variables"]["declarative_variables"][1]["value"] = 30
    path = tmp_path / "context_variables.json"
    path.write_text(json.dumps(example))
    settings.CONTEXTADMIN_REVIEW = "on"
    call_command("import_context", str(path), "--workflow", "Generator", "--replace",
                 stdout=io.StringIO())  # version 2, a draft
    settings.CONTEXTADMIN_REVIEW = "off"  # the CI job's process
    path.write_bytes(EXAMPLE_PATH.read_bytes())
    before = db_dump()
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"draft awaiting review.*dry run: the import would"):
        call_command("import_context", str(path), "--workflow", "Generator", "--replace",
                     "--dry-run", stdout=out)
    assert "~ declarative variable max_items: value 30 → 25" in out.getvalue()  # the diff
    assert db_dump() == before
    assert WorkflowVersion.objects.filter(workflow=generator).count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--runs", "99999999999999999999", "--runs: from 1 to 1,000,000"),
        ("--time-budget", "nan", "--time-budget: a positive number of seconds, got nan"),
        ("--time-budget", "inf", "--time-budget: a positive number of seconds, got inf"),
    ],
)
def test_impact_context_refuses_bounds_that_bound_nothing(
    generator: Workflow, option: str, value: str, message: str
) -> None:
    """``--runs`` past 2**63 ended in the database's IntegrityError (a traceback, exit 1
    where a gate reads 1 as "error" anyway); nan or inf seconds passed as a budget."""
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("impact_context", "Generator", option, value, stdout=io.StringIO())


def test_revoke_api_token_stops_a_leaked_token_from_the_command_line(
    daphne_server: LiveServer, shipped: tuple[str, str]
) -> None:
    """A pipeline rotating a runtime's secret revokes the old token without the admin."""
    name, secret = shipped
    url = f"{daphne_server.url}/api/workflows/{name}/context_variables.json"
    assert http_get(url=url, token=secret)[0] == 200
    revoked = daphne_server.manage("revoke_api_token", f"deploy-{name}")
    assert "Revoked token" in revoked.stderr and revoked.stdout == ""
    deadline = time.monotonic() + 5  # the server trusts a token it read for a second
    while http_get(url=url, token=secret)[0] != 401:
        assert time.monotonic() < deadline, "still served after the revoke"
        time.sleep(0.1)
    again = daphne_server.manage("revoke_api_token", f"deploy-{name}")  # a re-run: no error
    assert "revoked already" in again.stderr
    unknown = manage(daphne_server.env, "revoke_api_token", "no-such-token", check=False)
    assert unknown.returncode == 1 and "no API token named 'no-such-token'" in unknown.stderr
