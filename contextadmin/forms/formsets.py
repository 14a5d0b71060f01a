"""The inline formsets: one list of the document each (a category, the hand-offs, a variable's
triggers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import nested_admin
from django import forms
from django.core.exceptions import ValidationError
from django.db import connection, models

if TYPE_CHECKING:  # the check reads these formsets; they only carry it
    from contextadmin.forms.check import WorkflowCheck


def stored_row_id(*, model: type[models.Model], value: str) -> int | None:
    """The row id a page posted, when it could name a stored row of ``model`` (a positive
    integer within the database's range for the key); None for anything else."""
    pk = model._meta.pk
    assert pk is not None
    lowest, highest = connection.ops.integer_field_range(pk.get_internal_type())
    try:
        number = int(value)
    except ValueError:
        return None
    if number < max(lowest or 1, 1) or (highest is not None and number > highest):
        return None
    return number


class RowsFormSet(nested_admin.NestedInlineFormSet):
    """An inline formset whose posted row ids are checked before anything queries with them.

    nested_admin reads the stored rows with the ids the page posts, as given: ``abc`` or an id
    past the database's integers would raise inside the query (a 500). Such an id is posted as
    ``0`` (no row has it) and, like an id whose row is gone, said above the list; the row's own
    error is on its hidden id field, which the page does not show.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            return
        pk = self.model._meta.pk
        assert pk is not None
        unusable = {}
        for index in range(self.initial_form_count()):
            key = f"{self.add_prefix(index)}-{pk.name}"
            value = self.data.get(key)
            if value and stored_row_id(model=self.model, value=value) is None:
                unusable[key] = "0"
        if unusable:
            self.data = self.data.copy()  # the request's own stays as posted
            for key, value in unusable.items():
                self.data[key] = value  # replaced (a QueryDict's update() would append)

    def row_id_problems(self) -> list[str]:
        """The rows posted with an id that names no stored row of this list."""
        pk = self.model._meta.pk
        assert pk is not None
        return [
            f"row {index + 1}: its id is not a stored row of this list (deleted meanwhile, or "
            "changed by hand?): reload the page"
            for index, form in enumerate(self.initial_forms)
            if form.errors.get(pk.name)
        ]


class DefinitionsFormSet(RowsFormSet):
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
        errors = self.row_id_problems()
        if self.workflow_check is not None:
            self.workflow_check.run()
            self.workflow_check.restore(self)
            errors += self.workflow_check.formset_errors.get(self.key) or []
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


class TriggerFormSet(RowsFormSet):
    """The triggers of one derived variable: deleted along with their variable."""

    def clean(self) -> None:
        super().clean()
        parent_formset = getattr(getattr(self, "parent_form", None), "parent_formset", None)
        check = getattr(parent_formset, "workflow_check", None)
        if check is not None:  # the page's check placed its errors before a second cleaning
            check.restore(self)
        errors = self.row_id_problems()
        if errors:
            raise ValidationError(errors)

    def _should_delete_form(self, form: forms.BaseForm) -> bool:
        # Without this, a client that ticks only the variable's delete box would have
        # nested_admin re-create the triggers under a deleted variable.
        parent = getattr(self, "parent_form", None)
        parent_formset = getattr(parent, "parent_formset", None)
        if parent_formset is not None and parent_formset._should_delete_form(parent):
            return True
        return bool(super()._should_delete_form(form))
