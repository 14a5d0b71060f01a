"""A published version this release's format refuses warns at upgrade (``migrate`` runs the
database checks first), naming the workflow and what to do, before runs are refused."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from contextadmin.checks import UNPARSABLE, published_definitions_check
from contextadmin.models import WorkflowVersion

pytestmark = pytest.mark.django_db


def test_definitions_a_stricter_rule_refuses_warn_with_the_workflow_and_the_fix(generator):
    assert published_definitions_check(databases=["default"]) == []
    version = WorkflowVersion.objects.get(workflow=generator)
    document = json.loads(version.export)  # saved before triggers needed text to match
    document["context_variables"]["derived_variables"][0]["triggers"][0]["match"]["equals"] = ""
    WorkflowVersion.objects.filter(pk=version.pk).update(export=json.dumps(document))

    (warning,) = published_definitions_check(databases=["default"])

    assert warning.id == UNPARSABLE
    assert "Workflow 'Generator': its published version 1 breaks a rule" in warning.msg
    assert "match.equals" in warning.msg and "runs of it are refused" in warning.msg
    assert "Open Generator in the admin" in warning.hint


def test_the_check_runs_with_the_database_checks_and_only_with_them(generator, capsys):
    version = WorkflowVersion.objects.get(workflow=generator)
    WorkflowVersion.objects.filter(pk=version.pk).update(export='{"handoffs": 3}')
    call_command("check", "--database", "default")
    assert f"({UNPARSABLE}) Workflow 'Generator'" in capsys.readouterr().err
    assert published_definitions_check(databases=None) == []  # plain `check`: no queries
