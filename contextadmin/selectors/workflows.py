"""A workflow's definitions as a document and a config, its export, the JSON Schema, and the
hand-offs that never fire in production."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from contextadmin_sdk.engine import format as fmt

from contextadmin import specs
from contextadmin.models import (
    DerivedVariable,
    Handoff,
    OutputMapping,
    Trigger,
    Variable,
    Workflow,
)

ENVIRONMENTS = fmt.ENVIRONMENTS


class UnknownEnvironment(ValueError):
    """An export was asked for an environment other than development or production."""


def workflow_get(*, name: str) -> Workflow | None:
    """Return the workflow with this name, or None (also for a name no database can hold: a
    command-line argument of non-UTF-8 bytes must not end in a traceback)."""
    if fmt.text_problem(name):
        return None
    return Workflow.objects.filter(name=name).first()


def workflow_has_definitions(*, workflow: Workflow) -> bool:
    """Tell whether a workflow has any variables, hand-offs or output mappings."""
    return (
        workflow.variables.exists() or workflow.handoffs.exists() or workflow.outputs.exists()
    )


def derived_flag_names(*, workflow: Workflow | None = None) -> set[str]:
    """The derived flags defined now, of one workflow or of all (what a flag_flipped webhook
    may name)."""
    flags = DerivedVariable.objects.all()
    if workflow is not None:
        flags = flags.filter(workflow=workflow)
    return set(flags.values_list("name", flat=True))


def workflow_document(*, workflow: Workflow) -> dict[str, Any]:
    """Return the workflow's definitions as an unvalidated document (three queries).

    The triggers come in one query grouped here by variable, not by ``prefetch_related``,
    which builds a related manager and a queryset per variable: two thirds of a 1,000-variable
    export (docs/benchmarks.md, B5).
    """
    variables = Variable.objects.filter(workflow=workflow).order_by("position", "id")
    triggers: defaultdict[int, list[Trigger]] = defaultdict(list)
    for trigger in Trigger.objects.filter(variable__workflow=workflow).order_by("position", "id"):
        triggers[trigger.variable_id].append(trigger)
    handoffs = Handoff.objects.filter(workflow=workflow).order_by("position", "id")
    outputs = OutputMapping.objects.filter(workflow=workflow).order_by("position", "id")
    return specs.document_data(
        database_name=workflow.database_name,
        variables=((v, triggers[v.pk]) for v in variables),
        handoffs=handoffs,
        outputs=outputs,
    )


def workflow_config(*, workflow: Workflow) -> fmt.ContextVariablesFile:
    """Return the workflow's definitions, validated; raise ConfigError if they break a rule."""
    return fmt.parse_config(workflow_document(workflow=workflow)).config


def workflow_export(*, workflow: Workflow, environment: str = "development") -> bytes:
    """Return the canonical ``context_variables.json`` of a workflow for an environment."""
    if environment not in ENVIRONMENTS:
        raise UnknownEnvironment(
            f"one of {', '.join(ENVIRONMENTS)}, got {environment!r}"
        )
    config = workflow_config(workflow=workflow)
    return fmt.config_export_bytes(config, production=environment == "production")


def schema_export_bytes() -> bytes:
    """Return the JSON Schema of the format as checked in at docs/context_variables.schema.json."""
    return (json.dumps(fmt.json_schema(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


PRODUCTION_WARNING = "never fires in production: environment variables are suppressed"


def production_warnings(*, document: Mapping[str, Any]) -> list[str]:
    """Say which hand-offs name an environment variable: in production they never fire."""
    section = document.get("context_variables") or {}
    environment = {v.get("name") for v in section.get("environment_variables") or []}
    warnings = []
    for handoff in document.get("handoffs") or []:
        try:
            names = fmt.condition_names(handoff.get("condition", ""))
        except fmt.ConditionError:
            continue
        gated = [name for name in names if name in environment]
        if gated:
            warnings.append(
                f"hand-off {handoff.get('source_agent')} → {handoff.get('target_agent')} when "
                f"{handoff.get('condition')}: {PRODUCTION_WARNING} ({', '.join(gated)})"
            )
    return warnings
