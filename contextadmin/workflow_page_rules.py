"""The rules the workflow page's script applies while an operator edits, taken from the format
module and rendered into the page (``json_script``), so the script keeps no copy of them: which
fields each trigger type uses, what a variable reference in a hand-off condition looks like,
and the words of the production warning.
"""

from __future__ import annotations

from functools import cache
from typing import Any, get_args

from contextadmin_sdk.engine.format import NAME_PATTERN, TRIGGER_TYPES, Trigger
from pydantic import BaseModel

from contextadmin.selectors import PRODUCTION_WARNING

# A ``${name}`` reference in a condition, for JavaScript's RegExp: the format's name rule inside
# the condition grammar's delimiters (the grammar itself:
# contextadmin_sdk.engine.format.condition_names).
CONDITION_REFERENCE = r"\$\{(" + NAME_PATTERN.removeprefix("^").removesuffix("$") + r")\}"


def _form_fields(model: type[BaseModel]) -> list[str]:
    """A trigger model's fields as the page's columns: a nested model (``match``) flattened."""
    fields: list[str] = []
    for name, info in model.model_fields.items():
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            fields.extend(_form_fields(nested))
        elif name != "type":
            fields.append(name)
    return fields


@cache
def workflow_page_rules() -> dict[str, Any]:
    """What ``static/contextadmin/workflow.js`` reads from the ``workflow-rules`` script tag."""
    union = get_args(Trigger)[0]
    by_type = {
        model.model_fields["type"].default: _form_fields(model) for model in get_args(union)
    }
    trigger_fields = {kind: by_type[kind] for kind in TRIGGER_TYPES}
    every_field = list(dict.fromkeys(f for fields in trigger_fields.values() for f in fields))
    return {
        "trigger_fields": trigger_fields,
        "all_trigger_fields": every_field,
        "condition_reference": CONDITION_REFERENCE,
        "production_warning": PRODUCTION_WARNING,
    }
