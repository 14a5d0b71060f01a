"""Admin forms: one inline form per category, and the check of a whole submitted workflow.

No rule lives here. ``WorkflowCheck`` builds the workflow's ``context_variables.json`` from the
submitted inlines (through ``specs``, as the exporter does), validates it with
``fmt.parse_config`` and puts each ``ConfigIssue`` next to the form field its JSON path
names: ``context_variables.database_variables[1].source.collection`` is the ``collection`` of
the second database variable in admin order.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, ClassVar

import nested_admin
from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from contextadmin import selectors, services, specs
from contextadmin.models import (
    Category,
    DatabaseVariable,
    DeclarativeVariable,
    DerivedVariable,
    EnvironmentVariable,
    Handoff,
    Trigger,
    Workflow,
    workflow_name_validator,
)
from runs.engine import format as fmt

VARIABLE_KEYS = tuple(fmt.CATEGORY_KEYS[c] for c in fmt.CATEGORIES)


class PrimitiveField(forms.CharField):
    """A string, number or boolean typed as text; the form decodes it by the declared type."""

    def __init__(self, **kwargs: Any) -> None:
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance.category = self.category


class DeclarativeForm(VariableForm):
    category = Category.DECLARATIVE
    value = PrimitiveField(help_text="Text for a string; 25, 2.5 or true for the other types.")

    class Meta:
        model = DeclarativeVariable
        fields = ("name", "type", "value", "description", "position")
        widgets = {"position": _POSITION, "description": _DESCRIPTION}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "value" in data:
            data["value"] = primitive_from_text(
                data["value"], data.get("type"), blank_is_none=False
            )
        return data


class DatabaseForm(VariableForm):
    category = Category.DATABASE

    class Meta:
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
        widgets = {"position": _POSITION, "description": _DESCRIPTION}
        help_texts = {"database_name": "Empty: the workflow's database name."}


class EnvironmentForm(VariableForm):
    category = Category.ENVIRONMENT
    default = PrimitiveField(help_text="Used when the env var is unset; empty: none.")

    class Meta:
        model = EnvironmentVariable
        fields = ("name", "type", "env_var", "default", "description", "position")
        widgets = {"position": _POSITION, "description": _DESCRIPTION}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "default" in data:
            data["default"] = primitive_from_text(
                data["default"], data.get("type"), blank_is_none=True
            )
        return data


class DerivedForm(VariableForm):
    category = Category.DERIVED
    default = forms.BooleanField(required=False, help_text="The flag's value before any trigger.")

    class Meta:
        model = DerivedVariable
        fields = ("name", "description", "default", "position")
        widgets = {"position": _POSITION, "description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance.type = "boolean"


class TriggerForm(forms.ModelForm):
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


class DefinitionsFormSet(nested_admin.NestedInlineFormSet):
    """An inline formset of one list of the document (a category, or the hand-offs)."""

    key: ClassVar[str]
    workflow_check: WorkflowCheck | None = None

    @classmethod
    def get_default_prefix(cls) -> str:
        return cls.key

    def validate_unique(self) -> None:
        """Leave name uniqueness to the schema, which sees all four categories at once."""

    def clean(self) -> None:
        super().clean()
        if self.workflow_check is not None:
            self.workflow_check.run()
            errors = self.workflow_check.formset_errors.get(self.key)
            if errors:
                raise ValidationError(errors)


class DeclarativeFormSet(DefinitionsFormSet):
    key = "declarative_variables"


class DatabaseFormSet(DefinitionsFormSet):
    key = "database_variables"


class EnvironmentFormSet(DefinitionsFormSet):
    key = "environment_variables"


class DerivedFormSet(DefinitionsFormSet):
    key = "derived_variables"


class HandoffFormSet(DefinitionsFormSet):
    key = "handoffs"


class TriggerFormSet(nested_admin.NestedInlineFormSet):
    """The triggers of one derived variable: deleted along with their variable."""

    def _should_delete_form(self, form: forms.BaseForm) -> bool:
        # Without this, a client that ticks only the variable's delete box would have
        # nested_admin re-create the triggers under a deleted variable.
        parent = getattr(self, "parent_form", None)
        parent_formset = getattr(parent, "parent_formset", None)
        if parent_formset is not None and parent_formset._should_delete_form(parent):
            return True
        return bool(super()._should_delete_form(form))


class WorkflowCheck:
    """Validate the submitted inlines of one workflow together, once, through the format module."""

    def __init__(self, *, workflow: Workflow, formsets: Sequence[DefinitionsFormSet]) -> None:
        self.workflow = workflow
        self.formsets = {formset.key: formset for formset in formsets}
        self.formset_errors: dict[str, list[str]] = defaultdict(list)
        self.labels: list[str] = []
        self._done = False
        for formset in formsets:
            formset.workflow_check = self

    def run(self) -> None:
        """Check the document once all forms are individually valid; place each issue."""
        if self._done:
            return
        self._done = True
        rows = {key: _live_forms(formset) for key, formset in self.formsets.items()}
        triggers: dict[forms.BaseForm, list[forms.BaseForm]] = {}
        for form in rows.get("derived_variables", []):
            triggers[form] = [
                t for nested in getattr(form, "nested_formsets", []) for t in _live_forms(nested)
            ]
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
                    add(f"outputs[{index}]", form, {})
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

    def _place(
        self,
        issue: fmt.ConfigIssue,
        rows: dict[str, list[forms.BaseForm]],
        triggers: dict[forms.BaseForm, list[forms.BaseForm]],
    ) -> None:
        loc, message = issue.loc, humanize(issue.message)
        if len(loc) >= 3 and loc[0] == "context_variables" and loc[1] in VARIABLE_KEYS:
            form = _at(rows.get(str(loc[1]), []), loc[2])
            rest = loc[3:]
            if form is not None and rest[:1] == ("triggers",) and len(rest) >= 2:
                trigger_form = _at(triggers.get(form, []), rest[1])
                if trigger_form is not None:
                    _add_error(trigger_form, *_trigger_field(trigger_form, rest[2:], message))
                    return
            if form is not None:
                if rest[:1] == ("source",):
                    rest = rest[1:]
                _add_error(form, str(rest[0]) if rest else None, message)
                return
        if len(loc) >= 2 and loc[0] in ("handoffs", "outputs"):
            form = _at(rows.get(str(loc[0]), []), loc[1])
            if form is not None:
                _add_error(form, str(loc[2]) if len(loc) > 2 else None, message)
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


def _add_error(form: forms.BaseForm, field: str | None, message: str) -> None:
    if form.errors and (field in form.errors or field not in ("name", "condition", "to")):
        # The row already has errors: its stored values stand in for the wrong ones, so only
        # the rules across the document (names, conditions) say something new about it.
        return
    if field is not None and field in form.fields:
        form.add_error(field, message)
    else:
        form.add_error(None, f"{field}: {message}" if field else message)


_DECLARED_AT = re.compile(r"context_variables\.(\w+)_variables\[(\d+)\]")


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


class WorkflowForm(forms.ModelForm):
    """The workflow itself, the page's concurrency token and a note for the version.

    ``base_version`` is the version the page showed. Saving from an older one is refused
    (``services.StaleEdit``): the page comes back with everything typed kept, the diff of what
    changed meanwhile, and the token moved to the stored version so the next save goes through.
    """

    base_version = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    version_comment = forms.CharField(
        label="Change note",
        required=False,
        max_length=1000,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="Optional: why you change this, shown in History and to the reviewer.",
    )
    stale: Any = None

    class Meta:
        model = Workflow
        fields = ("name", "description", "database_name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["base_version"] = (
                selectors.workflow_head_number(workflow=self.instance) if self.instance.pk else 0
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        base = data.get("base_version")
        if self.instance.pk and base is not None:
            try:
                services.workflow_edit_lock(workflow=self.instance, base=base)
            except services.StaleEdit as exc:
                self.stale = exc
                self.data = self.data.copy()
                self.data[self.add_prefix("base_version")] = str(exc.current.number)
                current = exc.current
                raise ValidationError(
                    f"Not saved: version {current.number} was {current.get_action_display()} "
                    f"by {current.who} since you opened this page (what changed is shown "
                    "above); your edits are kept.",
                    code="stale",
                ) from None
        return data


class ImportUploadForm(forms.Form):
    name = forms.CharField(
        label="Workflow",
        max_length=100,
        validators=[workflow_name_validator],
        help_text="A new name creates the workflow; an existing one has its definitions replaced.",
    )
    file = forms.FileField(label="context_variables.json")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        limit = settings.FILE_UPLOAD_MAX_MEMORY_SIZE
        if upload.size > limit:
            raise ValidationError(f"The file is {upload.size} bytes; the limit is {limit} bytes.")
        return upload
