"""The workflow page's script takes its rules from the server: the trigger fields per type and
the condition reference come from the format module, rendered into the page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from contextadmin_sdk.engine.format import TRIGGER_TYPES, ConfigError, parse_config
from django.urls import reverse

from contextadmin.forms import TriggerForm
from contextadmin.workflow_page_rules import workflow_page_rules

SCRIPT = Path(__file__).resolve().parents[2] / "static" / "contextadmin" / "workflow.js"
NESTED = {"equals": ("match", "equals"), "case_sensitive": ("match", "case_sensitive"),
          "trim": ("match", "trim")}
VALUES = {"agent": "Writer", "equals": "DONE", "case_sensitive": True, "trim": False,
          "count": 2, "tool": "search", "status": "ok"}


def _trigger(kind: str, fields: list[str]) -> dict:
    trigger: dict = {"type": kind}
    for field in fields:
        if field in NESTED:
            outer, inner = NESTED[field]
            trigger.setdefault(outer, {})[inner] = VALUES[field]
        else:
            trigger[field] = VALUES[field]
    return trigger


def _accepted(trigger: dict) -> bool:
    try:
        parse_config(_config(trigger))
    except ConfigError:
        return False
    return True


def _config(trigger: dict) -> dict:
    return {"context_variables": {"derived_variables": [
        {"name": "done", "type": "boolean", "triggers": [trigger]}]}}


@pytest.mark.parametrize("kind", TRIGGER_TYPES)
def test_each_type_s_fields_are_the_ones_the_format_accepts(kind):
    fields = workflow_page_rules()["trigger_fields"][kind]
    assert set(fields) <= set(TriggerForm.Meta.fields)
    assert _accepted(_trigger(kind, fields))
    for other in set(workflow_page_rules()["all_trigger_fields"]) - set(fields):
        assert not _accepted(_trigger(kind, [*fields, other])), other


def test_the_condition_reference_finds_the_names_the_engine_finds():
    reference = re.compile(workflow_page_rules()["condition_reference"])
    assert reference.findall("${context_aware} and ${interview_complete}") == [
        "context_aware", "interview_complete"]
    assert reference.findall("${Not_A_Name}") == []


def test_the_script_keeps_no_copy_of_the_rules():
    script = SCRIPT.read_text(encoding="utf-8")
    assert "\\$\\{" not in script
    assert workflow_page_rules()["production_warning"] not in script
    assert not any(kind in script for kind in TRIGGER_TYPES)


@pytest.mark.django_db
def test_the_workflow_page_renders_the_rules(admin_client):
    page = admin_client.get(reverse("admin:contextadmin_workflow_add")).content.decode()
    rendered = re.search(r'<script id="workflow-rules" type="application/json">(.*?)</script>',
                         page, re.S)
    assert rendered is not None
    assert json.loads(rendered.group(1)) == workflow_page_rules()
