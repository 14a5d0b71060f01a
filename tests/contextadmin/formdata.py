"""Read an admin change form the way a browser submits it, and add inline forms to it."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any


class _FormParser(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.data: dict[str, str] = {}
        self._select: str | None = None
        self._select_first: str | None = None
        self._select_chosen = False
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("id") == self.form_id:
            self.inside = True
        if not self.inside:
            return
        name = a.get("name", "")
        if tag == "input" and name:
            kind = a.get("type", "text")
            if kind in ("submit", "button", "file"):
                return
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.data[name] = a.get("value", "on") or "on"
                return
            self.data[name] = a.get("value", "")
        elif tag == "select" and name:
            self._select, self._select_first, self._select_chosen = name, None, False
        elif tag == "option" and self._select:
            value = a.get("value", "")
            if self._select_first is None:
                self._select_first = value
            if "selected" in a:
                self.data[self._select] = value
                self._select_chosen = True
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.inside:
            self.inside = False
        elif tag == "select" and self._select:
            if not self._select_chosen and self._select_first is not None:
                self.data[self._select] = self._select_first
            self._select = None
        elif tag == "textarea" and self._textarea:
            self.data[self._textarea] = "".join(self._text).removeprefix("\n")
            self._textarea = None


def form_data(html: str, form_id: str = "workflow_form") -> dict[str, str]:
    """Return the fields a browser would post from the form, without inline templates."""
    parser = _FormParser(form_id)
    parser.feed(html)
    return {k: v for k, v in parser.data.items() if "__prefix__" not in k and "-empty-" not in k}


def add_form(data: dict[str, Any], prefix: str, **fields: Any) -> str:
    """Append a form to an inline formset; return its prefix (``derived_variables-1``)."""
    index = int(data.get(f"{prefix}-TOTAL_FORMS", 0))
    data.setdefault(f"{prefix}-INITIAL_FORMS", "0")
    data.setdefault(f"{prefix}-MIN_NUM_FORMS", "0")
    data.setdefault(f"{prefix}-MAX_NUM_FORMS", "1000")
    data[f"{prefix}-TOTAL_FORMS"] = str(index + 1)
    form_prefix = f"{prefix}-{index}"
    data.setdefault(f"{form_prefix}-position", str(index))
    for key, value in fields.items():
        if value is True:
            value = "on"
        if value is False:
            continue
        data[f"{form_prefix}-{key}"] = str(value)
    if prefix == "derived_variables":
        empty_formset(data, f"{form_prefix}-triggers")
    return form_prefix


def empty_formset(data: dict[str, Any], prefix: str) -> None:
    """Add the management form of an empty inline formset."""
    data.setdefault(f"{prefix}-TOTAL_FORMS", "0")
    data.setdefault(f"{prefix}-INITIAL_FORMS", "0")
    data.setdefault(f"{prefix}-MIN_NUM_FORMS", "0")
    data.setdefault(f"{prefix}-MAX_NUM_FORMS", "1000")


def new_workflow_data(name: str, **fields: Any) -> dict[str, Any]:
    """Return the post data of an empty add-workflow page."""
    data: dict[str, Any] = {"name": name, "description": "", "database_name": "", "_save": "Save"}
    data.update(fields)
    for prefix in (
        "declarative_variables",
        "database_variables",
        "environment_variables",
        "derived_variables",
        "handoffs",
        "outputs",
    ):
        empty_formset(data, prefix)
    return data
