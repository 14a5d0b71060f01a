"""The inline formsets: one list of the document each (a category, the hand-offs, a variable's
triggers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import nested_admin
from django import forms
from django.core.exceptions import ValidationError

if TYPE_CHECKING:  # the check reads these formsets; they only carry it
    from contextadmin.forms.check import WorkflowCheck


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
            self.workflow_check.restore(self)
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

    def clean(self) -> None:
        super().clean()
        parent_formset = getattr(getattr(self, "parent_form", None), "parent_formset", None)
        check = getattr(parent_formset, "workflow_check", None)
        if check is not None:  # the page's check placed its errors before a second cleaning
            check.restore(self)

    def _should_delete_form(self, form: forms.BaseForm) -> bool:
        # Without this, a client that ticks only the variable's delete box would have
        # nested_admin re-create the triggers under a deleted variable.
        parent = getattr(self, "parent_form", None)
        parent_formset = getattr(parent, "parent_formset", None)
        if parent_formset is not None and parent_formset._should_delete_form(parent):
            return True
        return bool(super()._should_delete_form(form))
