"""Translate between definition rows and the plain data of ``context_variables.json``.

Rows -> data leaves validation to ``fmt.parse_config``: empty optional fields are omitted
(so the schema says "field required"), and fields a trigger type does not use are passed on
(so the schema says "unknown field"). The admin builds unsaved rows from its forms and goes
through the same functions as the exporter, so both see the same document.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from typing import Any

from contextadmin_sdk.engine import format as fmt

from contextadmin.models import Category, Handoff, OutputMapping, Trigger, Variable, Workflow
from contextadmin.outputs import output_label, output_spec, output_stand_in


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
    """Return the data of one hand-off row: the format's fields, which the row has by name."""
    return {name: getattr(handoff, name) for name in fmt.Handoff.model_fields}


def document_data(
    *,
    database_name: str,
    variables: Iterable[tuple[Variable, Sequence[Trigger]]],
    handoffs: Iterable[Handoff],
    outputs: Iterable[OutputMapping] = (),
) -> dict[str, Any]:
    """Return a ``context_variables.json`` document from rows already in admin order
    (``outputs`` only when there are some, as the export has it)."""
    section: dict[str, Any] = {}
    if database_name:
        section["database_name"] = database_name
    for category in fmt.CATEGORIES:
        section[fmt.CATEGORY_KEYS[category]] = []
    for variable, triggers in variables:
        section[fmt.CATEGORY_KEYS[variable.category]].append(variable_spec(variable, triggers))
    document = {"context_variables": section, "handoffs": [handoff_spec(h) for h in handoffs]}
    mappings = [output_spec(output) for output in outputs]
    if mappings:
        document["outputs"] = mappings
    return document


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
        Handoff(workflow=workflow, position=position, **h.model_dump())
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


# -- checking everything in one pass ------------------------------------------------------------
# The format stops at the first stage that fails: field errors hide the rules that span the
# document (duplicate names, hand-off conditions, node collisions). To report every problem at
# once, the fields at fault are replaced by harmless stand-ins and the document is checked again;
# problems found that way are kept unless they fall on a field already reported.
_STAND_INS: dict[str, Any] = {
    "type": "string",
    "description": "",
    "database_name": "placeholder",
    "collection": "placeholder",
    "search_by": "placeholder",
    "field": "placeholder",
    "env_var": "PLACEHOLDER_VAR",
    "source_agent": "PlaceholderSourceAgent",
    "target_agent": "PlaceholderTargetAgent",
    "condition": "${placeholder_condition_flag}",
}
_VALUE_OF_TYPE: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}


def config_parse_all(data: Any) -> fmt.ParsedConfig:
    """Parse like ``fmt.parse_config``, but a ``ConfigError`` carries every problem at once."""
    try:
        return fmt.parse_config(data)
    except fmt.ConfigError as exc:
        first = exc.issues
        document = _decoded(data)
    if document is None:
        raise fmt.ConfigError(first)
    issues = list(first)
    for _ in range(3):  # each round may uncover the next stage's rules
        repaired = _repaired(document, issues)
        if repaired is None:
            break
        try:
            fmt.parse_config(repaired)
            break
        except fmt.ConfigError as exc:
            found = [i for i in exc.issues if not _overlaps(i.loc, issues)]
            if not found:
                break
            issues += found
    raise fmt.ConfigError(_sorted(issues))


def decoded_document(data: Any) -> dict[str, Any] | None:
    """Return a document as plain data, derived variables nested (None: not an object)."""
    return _decoded(data)


def _decoded(data: Any) -> dict[str, Any] | None:
    if isinstance(data, bytes | str):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError):
            return None
    if not isinstance(data, dict) or fmt.json_nesting_exceeds(data):
        return None  # parse_config already said why; nothing to repair in a document that deep
    document = copy.deepcopy(data)
    document.pop("variables", None)
    section = document.get("context_variables")
    if section is None:
        section = document["context_variables"] = {}
    if not isinstance(section, dict):
        return None
    section.pop("variables", None)
    if "derived_variables" in document and "derived_variables" not in section:
        section["derived_variables"] = document.pop("derived_variables")
    return document


def _overlaps(loc: tuple[Any, ...], issues: list[fmt.ConfigIssue]) -> bool:
    """Tell whether a problem falls on a field (or item) already reported."""
    for issue in issues:
        if loc == issue.loc:
            return True
        shorter = min(len(loc), len(issue.loc))
        # One inside the other, at item level or deeper (a field of a reported trigger, say).
        if shorter >= 3 and loc[:shorter] == issue.loc[:shorter]:
            return True
    return False


def _repaired(document: dict[str, Any], issues: list[fmt.ConfigIssue]) -> dict[str, Any] | None:
    """Return the document with each field at fault replaced by a stand-in (None: cannot)."""
    repaired = copy.deepcopy(document)
    dropped_triggers: set[tuple[Any, ...]] = set()
    for issue in issues:
        loc = issue.loc
        if not _repair_one(repaired, loc, dropped_triggers):
            return None
    for key, index, trigger in sorted(dropped_triggers, key=lambda t: -t[2]):
        triggers = repaired["context_variables"][key][index].get("triggers")
        if isinstance(triggers, list) and trigger < len(triggers):
            del triggers[trigger]
    return repaired


def _repair_one(document: dict[str, Any], loc: tuple[Any, ...], dropped: set[Any]) -> bool:
    if len(loc) >= 4 and loc[0] == "context_variables" and isinstance(loc[2], int):
        key, index = loc[1], loc[2]
        items = document["context_variables"].get(key)
        if not isinstance(items, list) or index >= len(items):
            return False
        item = items[index]
        if not isinstance(item, dict):
            items[index] = {"name": f"invalid_{index}_{key}", "triggers": []}
            return True
        rest = loc[3:]
        if rest[0] == "triggers":
            if len(rest) >= 2 and isinstance(rest[1], int):
                dropped.add((key, index, rest[1]))
            else:
                item["triggers"] = []
            return True
        if rest[0] == "source":
            source = item.get("source")
            if not isinstance(source, dict):
                item["source"] = _source_stand_in(key)
            elif len(rest) > 1:
                source[str(rest[1])] = _STAND_INS.get(str(rest[1]), "placeholder")
            return True
        return _field_repair(item, str(rest[0]), key, index)
    if len(loc) >= 3 and loc[0] == "handoffs" and isinstance(loc[1], int):
        handoffs = document.get("handoffs")
        if not isinstance(handoffs, list) or loc[1] >= len(handoffs):
            return False
        if not isinstance(handoffs[loc[1]], dict):
            handoffs[loc[1]] = {}
        field = str(loc[2])
        if field in _STAND_INS:
            handoffs[loc[1]][field] = _STAND_INS[field]
        else:
            handoffs[loc[1]].pop(field, None)
        return True
    if len(loc) == 3 and loc[0] == "context_variables" and isinstance(loc[2], int):
        # A whole variable is not an object.
        items = document["context_variables"].get(loc[1])
        if isinstance(items, list) and loc[2] < len(items):
            items[loc[2]] = {"name": f"invalid_{loc[2]}_{loc[1]}", "triggers": []}
            return True
    if len(loc) >= 2 and loc[0] == "outputs" and isinstance(loc[1], int):
        outputs = document.get("outputs")
        if not isinstance(outputs, list) or loc[1] >= len(outputs):
            return False
        outputs[loc[1]] = output_stand_in(loc[1])
        return True
    if loc == ("context_variables", "database_name"):
        document["context_variables"]["database_name"] = "placeholder"
        return True
    return False


def _field_repair(item: dict[str, Any], field: str, key: str, index: int) -> bool:
    if field == "name":
        item["name"] = f"invalid_{index}_{key.removesuffix('_variables')}"
    elif field in ("value", "default"):
        declared = item.get("type")
        if key == "derived_variables":
            item["default"] = False
        elif field == "default":
            item.pop("default", None)
        else:
            item["value"] = _VALUE_OF_TYPE.get(declared, "")
            if declared not in _VALUE_OF_TYPE:
                item["type"] = "string"
    elif field == "type":
        item["type"] = "boolean" if key == "derived_variables" else "string"
        if "value" in item:
            item["value"] = ""
        item.pop("default", None)
    elif field in _STAND_INS:
        item[field] = _STAND_INS[field]
    else:
        item.pop(field, None)  # an unknown field
    return True


def _source_stand_in(key: str) -> dict[str, Any]:
    if key == "environment_variables":
        return {"type": "environment", "env_var": _STAND_INS["env_var"]}
    return {
        "type": "database",
        **{k: _STAND_INS[k] for k in ("database_name", "collection", "search_by", "field")},
    }


def _sorted(issues: list[fmt.ConfigIssue]) -> list[fmt.ConfigIssue]:
    order = {"context_variables": 0, "handoffs": 1, "outputs": 2}
    keys = {fmt.CATEGORY_KEYS[c]: n for n, c in enumerate(fmt.CATEGORIES)}

    def key(issue: fmt.ConfigIssue) -> tuple[Any, ...]:
        loc = issue.loc
        head = order.get(str(loc[0]), 2) if loc else -1
        section = keys.get(str(loc[1]), -1) if len(loc) > 1 and head == 0 else -1
        index = next((part for part in loc if isinstance(part, int)), -1)
        return (head, section, index)

    return sorted(issues, key=key)


def issue_label(issue: fmt.ConfigIssue, data: Any) -> str:
    """One problem of an import: its full JSON path from the document root (``issue.path``,
    as in the file), the definition it falls in, then the message.

    ``context_variables.declarative_variables[0].value (max_items): must be an integer``.
    """
    if not issue.loc:
        return issue.message
    document = _decoded(data) if not isinstance(data, dict) else data
    subject = issue_subject(issue.loc, document)
    return f"{issue.path} ({subject}): {issue.message}" if subject else str(issue)


def issue_subject(loc: tuple[Any, ...], document: Any) -> str:
    """Name the definition a path falls in: a variable's name (``max_items``), a hand-off's
    agents (``InterviewAgent → PlannerAgent``), a mapping (``extract_keywords.keywords →
    agent.intermediate.keywords``); "" when the path is not inside one, or it has no name."""
    try:
        if len(loc) >= 3 and loc[0] == "context_variables" and isinstance(loc[2], int):
            item = document["context_variables"][loc[1]][loc[2]]
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                return item["name"][:60]
        elif len(loc) >= 2 and loc[0] == "handoffs" and isinstance(loc[1], int):
            item = document["handoffs"][loc[1]]
            if isinstance(item, dict):
                return f"{item.get('source_agent', '?')} → {item.get('target_agent', '?')}"
        elif len(loc) >= 2 and loc[0] == "outputs" and isinstance(loc[1], int):
            return output_label(document["outputs"][loc[1]])
    except (KeyError, IndexError, TypeError):
        pass
    return ""
