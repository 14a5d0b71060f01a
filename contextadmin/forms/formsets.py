"""The inline formsets: one list of the document each (a category, the hand-offs, a variable's
triggers)."""

from __future__ import annotations

import re
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


ROW_GONE = (
    "its id is not a stored row of this list (deleted since the page was opened, or changed by "
    "hand): what was typed into it is kept here; tick its Delete box to let it go, or add it "
    "again as a new row"
)


class RowsFormSet(nested_admin.NestedInlineFormSet):
    """An inline formset whose posted row ids are checked before anything queries with them.

    nested_admin reads the stored rows with the ids the page posts, as given: ``abc`` or an id
    past the database's integers would raise inside the query (a 500). Such an id is posted as
    ``0`` (no row has it) and, like an id whose row is gone, said above the list and on its row,
    which the page still shows with what was typed into it (``get_queryset``).
    """

    _posted_rows: list[models.Model] | None = None

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
        replaced = {**unusable, **self._distinct_positions()}
        if replaced:
            self.data = self.data.copy()  # the request's own stays as posted
            for key, value in replaced.items():
                self.data[key] = value  # replaced (a QueryDict's update() would append)

    def _distinct_positions(self) -> dict[str, str]:
        """Each posted position that repeats another row's, moved past it (the order kept).

        nested_admin's page sorts its rows by position and cannot order two rows of the same
        one (a 500); a stale save's merge gives two rows the same one when the other operator's
        save renumbered the rows beside one this page added or still lists.
        """
        keys = [f"{self.add_prefix(index)}-position" for index in range(self.total_form_count())]
        posted = sorted(
            (int(value), index)
            for index, key in enumerate(keys)
            if re.fullmatch(r"\d{1,9}", value := str(self.data.get(key) or "").strip())
        )
        moved, last = {}, -1
        for position, index in posted:
            if position <= last:
                position = last + 1
                moved[keys[index]] = str(position)
            last = position
        return moved

    def get_queryset(self) -> Any:
        """The stored row of each posted row, in the page's order; a stand-in (unsaved, holding
        what was posted) for a row that is no longer stored.

        The admin pairs the page's rows with this list place by place (each row's title and
        Delete box): in the stored order, a row another operator deleted or moved since the page
        was opened shifted every later row onto another's title, and the last one off the page
        with what was typed into it.
        """
        if not self.is_bound:
            return super().get_queryset()
        if self._posted_rows is None:
            pk = self.model._meta.pk
            assert pk is not None
            stored = {row.pk: row for row in super().get_queryset()}
            self._posted_rows = []
            for index in range(self.initial_form_count()):
                value = self.data.get(f"{self.add_prefix(index)}-{pk.name}") or ""
                number = stored_row_id(model=self.model, value=value)
                row = stored.get(number) if number is not None else None
                self._posted_rows.append(row or self._row_stand_in(index=index))
        return self._posted_rows

    def _row_stand_in(self, *, index: int) -> models.Model:
        """An unsaved row named as the page posted it (its title on the page)."""
        row = self.model()
        for field in self.model._meta.concrete_fields:
            value = self.data.get(f"{self.add_prefix(index)}-{field.name}")
            if isinstance(field, models.CharField) and isinstance(value, str):
                setattr(row, field.attname, value)
        return row

    def row_id_problems(self) -> list[str]:
        """The rows posted with an id that names no stored row of this list, each also said
        on its row (the id field it concerns is hidden)."""
        pk = self.model._meta.pk
        assert pk is not None
        problems = []
        for index, form in enumerate(self.initial_forms):
            if not form.errors.get(pk.name) or self._should_delete_form(form):
                continue  # a row deleted on the page may be gone already
            del form.errors[pk.name]
            form.add_error(None, ROW_GONE)
            problems.append(f"row {index + 1} ({self.get_queryset()[index]}): {ROW_GONE}")
        return problems


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
