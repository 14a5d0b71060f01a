"""One form per row of the document: a variable of each category, a trigger, a hand-off."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from contextadmin_sdk.engine import format as fmt
from django import forms

from contextadmin.forms.fields import PrimitiveField, primitive_from_text
from contextadmin.models import (
    Category,
    DatabaseVariable,
    DeclarativeVariable,
    DerivedVariable,
    EnvironmentVariable,
    Handoff,
    Trigger,
)


class PositionInput(forms.HiddenInput):
    """The sortable position: anything but a small integer reads as empty.

    nested_admin's ``formsetsort`` filter calls ``int()`` on the raw value when it renders.
    """

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        value = super().value_from_datadict(data, files, name)
        if isinstance(value, str) and re.fullmatch(r"\d{1,9}", value.strip()):
            return value.strip()
        return ""


_POSITION = PositionInput()
_DESCRIPTION = forms.Textarea(attrs={"rows": 1, "cols": 36})


class VariableForm(forms.ModelForm):
    category: ClassVar[str]

    class Meta:  # each category's form adds its model and fields: class Meta(VariableForm.Meta)
        widgets = {"position": _POSITION, "description": _DESCRIPTION}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance.category = self.category

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for name, field in self.fields.items():  # typed as text, read by the variable's type
            if isinstance(field, PrimitiveField) and name in data:
                data[name] = primitive_from_text(
                    data[name], data.get("type"), blank_is_none=field.blank_is_none
                )
        return data


class DeclarativeForm(VariableForm):
    category = Category.DECLARATIVE
    value = PrimitiveField(help_text="Text for a string; 25, 2.5 or true for the other types.")

    class Meta(VariableForm.Meta):
        model = DeclarativeVariable
        fields = ("name", "type", "value", "description", "position")


class DatabaseForm(VariableForm):
    category = Category.DATABASE

    class Meta(VariableForm.Meta):
        model = DatabaseVariable
        fields = (
            "name",
            "type",
            "database_name",
            "collection",
            "search_by",
            "field",
            "description",
            "position",
        )
        help_texts = {"database_name": "Empty: the workflow's database name."}


class EnvironmentForm(VariableForm):
    category = Category.ENVIRONMENT
    default = PrimitiveField(
        blank_is_none=True, help_text="Used when the env var is unset; empty: none."
    )

    class Meta(VariableForm.Meta):
        model = EnvironmentVariable
        fields = ("name", "type", "env_var", "default", "description", "position")


class DerivedForm(VariableForm):
    category = Category.DERIVED
    default = forms.BooleanField(required=False, help_text="The flag's value before any trigger.")

    class Meta(VariableForm.Meta):
        model = DerivedVariable
        fields = ("name", "description", "default", "position")
        widgets = {"position": _POSITION, "description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance.type = "boolean"


def format_bounds(model: type[Any], field: str) -> dict[str, int]:
    """A number field's ``min_value``/``max_value``, read from the format's own field: one rule,
    one message (the model's column would say "at least 0" where the format says 1)."""
    bounds = {}
    for rule in model.model_fields[field].metadata:
        if getattr(rule, "ge", None) is not None:
            bounds["min_value"] = rule.ge
        if getattr(rule, "le", None) is not None:
            bounds["max_value"] = rule.le
    return bounds


class TriggerForm(forms.ModelForm):
    count = forms.IntegerField(
        required=False, label="turn count", **format_bounds(fmt.AgentTurnCountTrigger, "count")
    )

    class Meta:
        model = Trigger
        fields = (
            "type",
            "agent",
            "equals",
            "case_sensitive",
            "trim",
            "count",
            "tool",
            "status",
            "position",
        )
        widgets = {"position": _POSITION}
        labels = {"equals": "text equals", "count": "turn count"}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("type") and data["type"] != "agent_text":
            # Matching options belong to agent_text; the page hides (and does not send) them
            # for the other types, which must not read as "trim: unticked".
            data["case_sensitive"], data["trim"] = False, True
        return data


class HandoffForm(forms.ModelForm):
    class Meta:
        model = Handoff
        fields = ("source_agent", "target_agent", "condition", "description", "position")
        widgets = {"position": _POSITION, "description": _DESCRIPTION}
