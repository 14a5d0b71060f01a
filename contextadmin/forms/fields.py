"""Form fields for the format's values: a primitive typed as text, read by its variable's type."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms


class PrimitiveField(forms.CharField):
    """A string, number or boolean typed as text; the form decodes it by the declared type
    (``primitive_from_text``), reading a blank as none when ``blank_is_none``."""

    def __init__(self, *, blank_is_none: bool = False, **kwargs: Any) -> None:
        self.blank_is_none = blank_is_none
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 20}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return json.dumps(value)
        return value

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.prepare_value(initial) != (data or "")


def primitive_from_text(text: str, type_: str | None, *, blank_is_none: bool) -> Any:
    """Decode typed-in text as a value of the declared type, or leave it text for the fmt."""
    if type_ == "string" and not (blank_is_none and text == ""):
        return text
    stripped = text.strip()
    if not stripped:
        return None
    if type_ == "boolean" and stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    if type_ == "integer" and re.fullmatch(r"[+-]?\d{1,300}", stripped):
        return int(stripped)
    if type_ == "number":
        try:
            number = json.loads(stripped)
        except ValueError:
            return stripped
        if isinstance(number, int | float) and not isinstance(number, bool):
            return number
    return stripped
