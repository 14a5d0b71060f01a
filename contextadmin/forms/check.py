"""The check of a whole submitted workflow: the document built from the inlines, validated by
the format module, each issue put next to the form field its JSON path names
(``context_variables.database_variables[1].source.collection`` is the ``collection`` of the
second database variable in admin order)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from contextadmin_sdk.engine import format as fmt
from django import forms

from contextadmin import specs
from contextadmin.forms.formsets import DefinitionsFormSet
from contextadmin.models import (
    Workflow,
)
from contextadmin.outputs import output_label, output_spec

VARIABLE_KEYS = tuple(fmt.CATEGORY_KEYS[c] for c in fmt.CATEGORIES)


class WorkflowCheck:
    """Validate the submitted inlines of one workflow together, once, through the format module."""

    def __init__(self, *, workflow: Workflow, formsets: Sequence[DefinitionsFormSet]) -> None:
        self.workflow = workflow
        self.formsets = {formset.key: formset for formset in formsets}
        self.formset_errors: dict[str, list[str]] = defaultdict(list)
        self.labels: list[str] = []
        self.placed: list[tuple[forms.BaseForm, str | None, str]] = []  # (form, field, message)
        self.output_names: list[str] = []  # each live mapping, in document order, as the page
        self.own_errors: set[forms.BaseForm] = set()  # rows wrong before the check (by Django)
        self._done = False
        for formset in formsets:
            formset.workflow_check = self

    def run(self) -> None:
        """Check the document once all forms are individually valid; place each issue."""
        if self._done:
            return
        self._done = True
        rows = {key: _live_forms(formset) for key, formset in self.formsets.items()}
        if "outputs" in self.formsets:
            self.output_names = _output_names(rows["outputs"], self.formsets["outputs"])
        triggers: dict[forms.BaseForm, list[forms.BaseForm]] = {}
        for form in rows.get("derived_variables", []):
            triggers[form] = [
                t for nested in getattr(form, "nested_formsets", []) for t in _live_forms(nested)
            ]
        live = [form for forms_ in rows.values() for form in forms_]
        live += [trigger for nested in triggers.values() for trigger in nested]
        self.own_errors = {form for form in live if form.errors}
        # One pass: the document is checked even when some fields are already wrong (their
        # rows carry what was valid); what the check says about those fields is left out.
        document = specs.document_data(
            database_name=self.workflow.database_name,
            variables=[
                (form.instance, [t.instance for t in triggers.get(form, [])])
                for key in VARIABLE_KEYS
                for form in rows.get(key, [])
            ],
            handoffs=[form.instance for form in rows.get("handoffs", [])],
            outputs=[form.instance for form in rows.get("outputs", [])],
        )
        try:
            specs.config_parse_all(document)
        except fmt.ConfigError as exc:
            for issue in exc.issues:
                self._place(issue, rows, triggers)
        self.labels = self._labels(rows, triggers)

    def restore(self, formset: forms.BaseFormSet) -> None:
        """Put back on ``formset``'s forms the errors this check placed there, if they were
        cleaned again since: nested_admin validates every form a second time when a save
        deletes a row, and a check that ran once must still refuse the save."""
        for form, field, message in self.placed:
            text = _message(field, form, message)
            if form in formset.forms and text not in _messages(form, field):
                form.add_error(field if field in form.fields else None, text)

    def _put(self, form: forms.BaseForm, field: str | None, message: str) -> None:
        if _add_error(form, field, message, own_errors=form in self.own_errors):
            self.placed.append((form, field, message))

    def _labels(
        self,
        rows: dict[str, list[forms.BaseForm]],
        triggers: dict[forms.BaseForm, list[forms.BaseForm]],
    ) -> list[str]:
        """Every error of the page, each naming its variable and path, in document order."""
        labels: list[str] = []

        def add(path: str, form: forms.BaseForm, paths: dict[str, str] = _FIELD_PATHS) -> None:
            for field, errors in form.errors.items():
                where = path if field == "__all__" else f"{path}.{paths.get(field, field)}"
                labels.extend(f"{where}: {error}" for error in errors)

        for key in (*VARIABLE_KEYS, "handoffs", "outputs"):
            for index, form in enumerate(rows.get(key, [])):
                if key == "outputs":
                    add(f"outputs[{index}] ({output_label(output_spec(form.instance))})", form, {})
                    continue
                if key == "handoffs":
                    data = getattr(form, "cleaned_data", {}) or {}
                    source = data.get("source_agent") or form.data.get(
                        form.add_prefix("source_agent"), "?"
                    )
                    target = data.get("target_agent") or form.data.get(
                        form.add_prefix("target_agent"), "?"
                    )
                    path = f"handoffs[{index}] ({source} → {target})"
                else:
                    name = form.data.get(form.add_prefix("name"), "") or "unnamed"
                    path = f"{key}[{index}] ({name})"
                add(path, form)
                for position, trigger in enumerate(triggers.get(form, [])):
                    add(f"{path}.triggers[{position}]", trigger)
            labels += [f"{key}: {error}" for error in self.formset_errors.get(key, [])]
        return labels

    def _in_row_terms(self, message: str) -> str:
        """Name another mapping the way the page shows it, not by its index in the document
        (``outputs[0]``: 0-based, and blind to the rows this save deletes or moves)."""

        def name(match: re.Match[str]) -> str:
            index = int(match.group(1))
            names = self.output_names
            return names[index] if index < len(names) else f"output mapping #{index + 1}"

        return _OUTPUT_AT.sub(name, message)

    def _place(
        self,
        issue: fmt.ConfigIssue,
        rows: dict[str, list[forms.BaseForm]],
        triggers: dict[forms.BaseForm, list[forms.BaseForm]],
    ) -> None:
        loc, message = issue.loc, self._in_row_terms(humanize(issue.message))
        if len(loc) >= 3 and loc[0] == "context_variables" and loc[1] in VARIABLE_KEYS:
            form = _at(rows.get(str(loc[1]), []), loc[2])
            rest = loc[3:]
            if form is not None and rest[:1] == ("triggers",) and len(rest) >= 2:
                trigger_form = _at(triggers.get(form, []), rest[1])
                if trigger_form is not None:
                    self._put(trigger_form, *_trigger_field(trigger_form, rest[2:], message))
                    return
            if form is not None:
                if rest[:1] == ("source",):
                    rest = rest[1:]
                self._put(form, str(rest[0]) if rest else None, message)
                return
        if len(loc) >= 2 and loc[0] in ("handoffs", "outputs"):
            form = _at(rows.get(str(loc[0]), []), loc[1])
            if form is not None:
                self._put(form, str(loc[2]) if len(loc) > 2 else None, message)
                return
        if loc == ("context_variables", "database_name"):
            self.formset_errors["database_variables"].append(f"Workflow database name: {message}")
            return
        key = (
            str(loc[1]) if len(loc) > 1 and loc[1] in self.formsets else str(loc[0] if loc else "")
        )
        if key not in self.formsets:
            key = next(iter(self.formsets))
        self.formset_errors[key].append(str(issue))


def _live_forms(formset: forms.BaseFormSet) -> list[forms.BaseForm]:
    """Return the forms that will be saved, in the order they will be saved in (position)."""
    live = []
    for index, form in enumerate(formset.forms):
        form.errors  # noqa: B018  (clean the form: cleaned_data says whether it is deleted)
        if formset.can_delete and formset._should_delete_form(form):
            continue
        if index >= formset.initial_form_count() and not form.has_changed():
            continue
        live.append(form)
    sort_field = getattr(formset, "sortable_field_name", None) or "position"
    return sorted(live, key=lambda form: getattr(form, "cleaned_data", {}).get(sort_field) or 0)


def _output_names(live: list[forms.BaseForm], formset: forms.BaseFormSet) -> list[str]:
    """Each live mapping (document order) named as the page shows it: ``output mapping #2
    (search_documents.document_list → agent.final_result.documents)``, #2 counting the rows in
    the order the page lists them (by position, as nested_admin's ``formsetsort``: rows without
    one last; a row this save deletes is still listed)."""
    sort_field = getattr(formset, "sortable_field_name", None) or "position"

    def page_position(form: forms.BaseForm) -> tuple[bool, int]:
        value = form[sort_field].data if sort_field in form.fields else None
        return (not value, int(value) if value else 0)

    number = {form: n for n, form in enumerate(sorted(formset.forms, key=page_position), 1)}
    return [
        f"output mapping #{number[form]} ({output_label(output_spec(form.instance))})"
        for form in live
    ]


def _at(items: list[forms.BaseForm], index: Any) -> forms.BaseForm | None:
    return items[index] if isinstance(index, int) and 0 <= index < len(items) else None


def _trigger_field(
    form: forms.BaseForm, rest: tuple[Any, ...], message: str
) -> tuple[str | None, str]:
    field = str(rest[0]) if rest else None
    if field == "match":
        field = str(rest[1]) if len(rest) > 1 else "equals"
    if message == "unknown field":
        kind = form.cleaned_data.get("type", "this")
        message = f"not used by {kind} triggers: leave it empty"
    return field, message


_FIELD_PATHS = {
    "equals": "match.equals",
    "case_sensitive": "match.case_sensitive",
    "trim": "match.trim",
    "collection": "source.collection",
    "search_by": "source.search_by",
    "field": "source.field",
    "env_var": "source.env_var",
    "database_name": "source.database_name",
}


def _add_error(form: forms.BaseForm, field: str | None, message: str, *, own_errors: bool) -> bool:
    """Put one issue on ``form`` (False when the row's own errors already say enough, or the
    field already says exactly this)."""
    if own_errors and (field in form.errors or field not in ("name", "condition", "to")):
        # The row failed its own form: its stored values stand in for the wrong ones, so only
        # the rules across the document (names, conditions) say something new about it.
        # A row the check alone finds wrong gets every issue: one save shows them all.
        return False
    text = _message(field, form, message)
    if text in _messages(form, field):
        return False
    form.add_error(field if field in form.fields else None, text)
    return True


def _message(field: str | None, form: forms.BaseForm, message: str) -> str:
    """The error's text: a field's own, or naming the field among the row's errors."""
    if field is None or field in form.fields:
        return message
    return f"{field}: {message}"


def _messages(form: forms.BaseForm, field: str | None) -> list[str]:
    key = field if field in form.fields else "__all__"
    return [str(error) for error in form.errors.get(key, [])]


_DECLARED_AT = re.compile(r"context_variables\.(\w+)_variables\[(\d+)\]")
_OUTPUT_AT = re.compile(r"\boutputs\[(\d+)\]")


def humanize(message: str) -> str:
    """Say 'declarative variable #1' where the schema says a JSON path, for the admin page."""
    message = _DECLARED_AT.sub(lambda m: f"{m.group(1)} variable #{int(m.group(2)) + 1}", message)
    return message.replace("context_variables.database_name", "in the workflow's Database name")


def names_to_release(formsets: Sequence[forms.BaseFormSet]) -> list[int]:
    """Return the ids of saved variables that this submission renames or deletes."""
    ids = []
    for formset in formsets:
        if not isinstance(formset, DefinitionsFormSet) or formset.key not in VARIABLE_KEYS:
            continue
        for form in formset.initial_forms:
            if form.instance.pk and (
                formset._should_delete_form(form) or "name" in form.changed_data
            ):
                ids.append(form.instance.pk)
    return ids
