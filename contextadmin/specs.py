"""Translate between definition rows and the plain data of ``context_variables.json``.

Rows -> data leaves validation to ``fmt.parse_config``: empty optional fields are omitted
(so the schema says "field required"), and fields a trigger type does not use are passed on
(so the schema says "unknown field"). The admin builds unsaved rows from its forms and goes
through the same functions as the exporter, so both see the same document.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from contextadmin.models import Category, Handoff, Trigger, Variable, Workflow
from runs.engine import format as fmt


def trigger_spec(trigger: Trigger) -> dict[str, Any]:
    """Return the data of one trigger row."""
    data: dict[str, Any] = {"type": trigger.type}
    if trigger.agent:
        data["agent"] = trigger.agent
    if trigger.tool:
        data["tool"] = trigger.tool
    if trigger.count is not None:
        data["count"] = trigger.count
    if trigger.status:
        data["status"] = trigger.status
    if trigger.type == "agent_text" or trigger.equals or trigger.case_sensitive or not trigger.trim:
        data["match"] = {
            "equals": trigger.equals,
            "case_sensitive": trigger.case_sensitive,
            "trim": trigger.trim,
        }
    return data


def variable_spec(variable: Variable, triggers: Iterable[Trigger] = ()) -> dict[str, Any]:
    """Return the data of one variable row (``triggers`` only matter for derived ones)."""
    data: dict[str, Any] = {"name": variable.name}
    category = variable.category
    data["type"] = "boolean" if category == Category.DERIVED else variable.type
    data["description"] = variable.description
    if category == Category.DECLARATIVE:
        data["value"] = variable.value
    elif category == Category.DATABASE:
        source: dict[str, Any] = {"type": "database"}
        for key in ("database_name", "collection", "search_by", "field"):
            if getattr(variable, key):
                source[key] = getattr(variable, key)
        data["source"] = source
    elif category == Category.ENVIRONMENT:
        data["source"] = {"type": "environment"}
        if variable.env_var:
            data["source"]["env_var"] = variable.env_var
        if variable.default is not None:
            data["default"] = variable.default
    elif category == Category.DERIVED:
        if variable.default is not None:
            data["default"] = variable.default
        data["triggers"] = [trigger_spec(t) for t in triggers]
    return data


def handoff_spec(handoff: Handoff) -> dict[str, Any]:
    """Return the data of one hand-off row."""
    return {
        "source_agent": handoff.source_agent,
        "target_agent": handoff.target_agent,
        "condition": handoff.condition,
        "description": handoff.description,
    }


def document_data(
    *,
    database_name: str,
    variables: Iterable[tuple[Variable, Sequence[Trigger]]],
    handoffs: Iterable[Handoff],
) -> dict[str, Any]:
    """Return a ``context_variables.json`` document from rows already in admin order."""
    section: dict[str, Any] = {}
    if database_name:
        section["database_name"] = database_name
    for category in fmt.CATEGORIES:
        section[fmt.CATEGORY_KEYS[category]] = []
    for variable, triggers in variables:
        section[fmt.CATEGORY_KEYS[variable.category]].append(variable_spec(variable, triggers))
    return {"context_variables": section, "handoffs": [handoff_spec(h) for h in handoffs]}


def rows_from_config(
    *, workflow: Workflow, config: fmt.ContextVariablesFile
) -> tuple[list[tuple[Variable, list[Trigger]]], list[Handoff]]:
    """Return unsaved rows (variables with their triggers, hand-offs) for a parsed config."""
    variables: list[tuple[Variable, list[Trigger]]] = []
    for category, index, item in config.variables():
        variable = Variable(
            workflow=workflow,
            category=category,
            name=item.name,
            type=item.type,
            description=item.description,
            position=index,
        )
        triggers: list[Trigger] = []
        if isinstance(item, fmt.DeclarativeVariable):
            variable.value = item.value
        elif isinstance(item, fmt.DatabaseVariable):
            variable.database_name = item.source.database_name or ""
            variable.collection = item.source.collection
            variable.search_by = item.source.search_by
            variable.field = item.source.field
        elif isinstance(item, fmt.EnvironmentVariable):
            variable.env_var = item.source.env_var
            variable.default = item.default
        elif isinstance(item, fmt.DerivedVariable):
            variable.default = item.default
            triggers = [_trigger_row(t, position) for position, t in enumerate(item.triggers)]
        variables.append((variable, triggers))
    handoffs = [
        Handoff(
            workflow=workflow,
            position=position,
            source_agent=h.source_agent,
            target_agent=h.target_agent,
            condition=h.condition,
            description=h.description,
        )
        for position, h in enumerate(config.handoffs)
    ]
    return variables, handoffs


def _trigger_row(trigger: Any, position: int) -> Trigger:
    row = Trigger(position=position, type=trigger.type)
    if isinstance(trigger, fmt.AgentTextTrigger):
        row.agent = trigger.agent
        row.equals = trigger.match.equals
        row.case_sensitive = trigger.match.case_sensitive
        row.trim = trigger.match.trim
    elif isinstance(trigger, fmt.AgentTurnCountTrigger):
        row.agent = trigger.agent
        row.count = trigger.count
    elif isinstance(trigger, fmt.ToolResponseTrigger):
        row.tool = trigger.tool
        row.status = trigger.status or ""
    return row
