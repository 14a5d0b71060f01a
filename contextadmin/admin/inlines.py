"""The workflow page's parts: each list of the document as an inline of the workflow, editable
by whoever may edit workflows."""

from __future__ import annotations

from typing import Any

import nested_admin
from django.contrib.admin.utils import flatten_fieldsets
from django.http import HttpRequest

from contextadmin.forms import (
    DatabaseForm,
    DatabaseFormSet,
    DeclarativeForm,
    DeclarativeFormSet,
    DerivedForm,
    DerivedFormSet,
    EnvironmentForm,
    EnvironmentFormSet,
    HandoffForm,
    HandoffFormSet,
    TriggerForm,
    TriggerFormSet,
)
from contextadmin.models import (
    DatabaseVariable,
    DeclarativeVariable,
    DerivedVariable,
    EnvironmentVariable,
    Handoff,
    OutputMapping,
    Trigger,
)
from contextadmin.output_forms import OutputMappingForm, OutputMappingFormSet


def may_edit_workflows(request: HttpRequest) -> bool:
    user = request.user
    return user.has_perm("contextadmin.change_workflow") or user.has_perm(
        "contextadmin.add_workflow"
    )


class WorkflowPartInline:
    """Variables, triggers and hand-offs are edited as parts of their workflow."""

    extra = 0
    sortable_field_name = "position"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_edit_workflows(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_edit_workflows(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_edit_workflows(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_edit_workflows(request) or request.user.has_perm("contextadmin.view_workflow")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        """Without the order field for whoever may only view: nested_admin prints a read-only
        hidden field as the dict that describes it (the form keeps it: ``get_formset``)."""
        fieldsets = super().get_fieldsets(request, obj)  # type: ignore[misc]
        if may_edit_workflows(request):
            return fieldsets
        shown = [name for name in flatten_fieldsets(fieldsets) if name != self.sortable_field_name]
        return [(None, {"fields": shown})]

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if "fields" not in kwargs:  # every field, the order too: nested_admin lists rows by it
            kwargs["fields"] = self.get_fields(request, obj)  # type: ignore[attr-defined]
        return super().get_formset(request, obj, **kwargs)  # type: ignore[misc]


def _variables_inline(model: type, form: type, formset: type) -> type:
    """The inline of one category's variables (declarative, database, environment)."""
    attributes = {
        "__module__": __name__,
        "model": model,
        "form": form,
        "formset": formset,
        "sortable_excludes": ("type",),
    }
    bases = (WorkflowPartInline, nested_admin.NestedTabularInline)
    return type(f"{model.__name__.removesuffix('Variable')}Inline", bases, attributes)


DeclarativeInline = _variables_inline(DeclarativeVariable, DeclarativeForm, DeclarativeFormSet)
DatabaseInline = _variables_inline(DatabaseVariable, DatabaseForm, DatabaseFormSet)
EnvironmentInline = _variables_inline(EnvironmentVariable, EnvironmentForm, EnvironmentFormSet)


class TriggerInline(WorkflowPartInline, nested_admin.NestedTabularInline):
    model = Trigger
    form = TriggerForm
    formset = TriggerFormSet
    sortable_excludes = ("type", "case_sensitive", "trim")


class DerivedInline(WorkflowPartInline, nested_admin.NestedStackedInline):
    model = DerivedVariable
    form = DerivedForm
    formset = DerivedFormSet
    inlines = [TriggerInline]
    sortable_excludes = ("default",)


class HandoffInline(WorkflowPartInline, nested_admin.NestedTabularInline):
    model = Handoff
    form = HandoffForm
    formset = HandoffFormSet


class OutputMappingInline(WorkflowPartInline, nested_admin.NestedTabularInline):
    model = OutputMapping
    form = OutputMappingForm
    formset = OutputMappingFormSet
