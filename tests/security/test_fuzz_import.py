"""Fuzzing ``context_variables.json`` import: the service, ``import_context`` and the admin page.

Every input is either accepted (and then exports, renders and starts runs) or rejected with a
report naming JSON paths; a rejected input changes nothing; nothing answers 500 or a traceback.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import orjson
import pytest
from contextadmin_sdk.engine import format as fmt
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from contextadmin import selectors, services
from contextadmin.models import Workflow
from runs.services import lifecycle
from runs.state import run_state_at
from tests.runs.conftest import demo_config
from tests.security.conftest import db_state
from tests.security.strategies import as_bytes, config_inputs

pytestmark = pytest.mark.django_db



def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


IMPORT_URL = "/admin/contextadmin/workflow/import/"


def rich_base() -> dict[str, Any]:
    """The demo document plus every optional feature: hand-offs, all trigger types, defaults."""
    document = copy.deepcopy(demo_config())
    section = document["context_variables"]
    section["environment_variables"][0]["default"] = True
    section["derived_variables"].append(
        {
            "name": "drafted",
            "type": "boolean",
            "default": False,
            "triggers": [
                {"type": "agent_turn_count", "agent": "WriterAgent", "count": 2},
                {"type": "tool_response", "tool": "save_draft", "status": "success"},
                {
                    "type": "agent_text",
                    "agent": "WriterAgent",
                    "match": {"equals": "DONE", "case_sensitive": True, "trim": False},
                },
            ],
        }
    )
    document["handoffs"] = [
        {
            "source_agent": "InterviewAgent",
            "target_agent": "WriterAgent",
            "condition": "${interview_complete} and ${context_aware}",
            "description": "hand over once the interview is done",
        }
    ]
    fmt.parse_config(document)  # the base itself must be valid
    return document


BASE = rich_base()


def with_value(value: Any) -> dict[str, Any]:
    """The base document with its first declarative value replaced."""
    document = copy.deepcopy(BASE)
    document["context_variables"]["declarative_variables"][0]["value"] = value
    return document


def assert_usable(name: str) -> None:
    """An accepted import exports in both environments, round-trips, and can start a run."""
    workflow = Workflow.objects.get(name=name)
    exported = selectors.workflow_export(workflow=workflow, environment="development")
    fmt.parse_config(exported)
    selectors.workflow_export(workflow=workflow, environment="production").decode("utf-8")
    run = lifecycle.run_start(workflow_name=name, enterprise_id="acme").run
    orjson.dumps(run_state_at(run=run).as_response(run))


def assert_clean_report(exc: fmt.ConfigError) -> None:
    assert exc.issues
    for issue in exc.issues:
        assert isinstance(issue.message, str) and issue.message
        str(issue).encode("utf-8")  # shown on a page and in a terminal: must be valid Unicode


@fuzz(400)
@given(data=config_inputs(BASE), replace=st.booleans())
@example(data=with_value("a\udfffb"), replace=True)
@example(data=with_value("nul\x00inside"), replace=True)
@example(data=with_value(2**70), replace=True)
@example(data=with_value(10**400), replace=True)
@example(data={"context_variables": {"\ud800": 1}}, replace=True)
@example(data=b'{"context_variables": {"x\\ud800": 1}}', replace=True)
def test_service_import_accepts_or_rejects_with_json_paths(generator, data, replace):
    before = db_state()
    try:
        services.workflow_import(name="Generator", data=data, replace=replace)
    except fmt.ConfigError as exc:
        event("rejected")
        assert_clean_report(exc)
        assert db_state() == before
        return
    except services.ImportRefused as exc:
        event("refused")
        assert not replace and "already has definitions" in str(exc)
        assert db_state() == before
        return
    event("accepted")
    assert_usable("Generator")


@fuzz(60)
@given(data=config_inputs(BASE).map(as_bytes))
@example(data=as_bytes(json.dumps(with_value("a\udfffb"), ensure_ascii=False)))
@example(data=b'{"context_variables": {"\\ud800": 1}}')
def test_import_context_command_reports_and_changes_nothing(generator, tmp_path_factory, data):
    path = Path(tmp_path_factory.mktemp("upload")) / "context_variables.json"
    path.write_bytes(data)
    before = db_state()
    try:
        call_command(
            "import_context", str(path), "--workflow", "Generator", "--replace",
            stdout=_Sink(), stderr=_Sink(),
        )
    except CommandError as exc:
        assert "Traceback" not in str(exc)
        str(exc).encode("utf-8")
        assert db_state() == before
        return
    assert_usable("Generator")


class _Sink:
    """A stdout/stderr for commands that checks every line is printable Unicode."""

    def write(self, text: str) -> None:
        text.encode("utf-8")

    def flush(self) -> None:
        pass


@fuzz(100)
@given(data=config_inputs(BASE).map(as_bytes), name=st.sampled_from(["Generator", "Fresh"]))
@example(data=as_bytes(json.dumps(with_value("a\udfffb"), ensure_ascii=False)), name="Fresh")
@example(data=b'{"context_variables": {"\\ud800\\u0000": 1}}', name="Fresh")
@example(data=as_bytes(with_value(2**70)), name="Generator")
@example(data=as_bytes(with_value("<script>alert(1)</script>")), name="Generator")
def test_admin_import_page_reports_previews_and_applies(
    generator, staff_client, caplog, data, name
):
    caplog.set_level(logging.ERROR, logger="django")
    before = db_state()
    upload = SimpleUploadedFile("context_variables.json", data, content_type="application/json")
    response = staff_client.post(IMPORT_URL, {"step": "upload", "name": name, "file": upload})
    html = response.content.decode("utf-8")
    assert response.status_code == 200
    assert "Traceback" not in html
    assert db_state() == before, "a preview changes nothing"
    if response.context.get("issues"):
        assert "Nothing was changed" in html
        return
    if response.context["form"].errors:  # e.g. an empty file
        assert "errorlist" in html
        return
    token = response.context.get("token")
    assert token, html[:2000]
    applied = staff_client.post(IMPORT_URL, {"step": "apply", "token": token})
    assert applied.status_code == 302, applied.content[:2000]
    workflow = Workflow.objects.get(name=name)
    page = staff_client.get(f"/admin/contextadmin/workflow/{workflow.pk}/change/")
    assert page.status_code == 200
    assert_usable(name)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
