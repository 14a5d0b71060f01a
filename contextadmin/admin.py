"""The definitions admin: a workflow's four variable categories, triggers and hand-offs on one page.

Validation is the schema's (see ``forms.WorkflowCheck``); saving is Django's inline formsets.
The import page (upload -> report -> diff -> apply) calls ``services.workflow_import``.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

import nested_admin
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.crypto import constant_time_compare
from django.utils.html import format_html

from contextadmin import services
from contextadmin.forms import (
    DatabaseForm,
    DatabaseFormSet,
    DeclarativeForm,
    DeclarativeFormSet,
    DefinitionsFormSet,
    DerivedForm,
    DerivedFormSet,
    EnvironmentForm,
    EnvironmentFormSet,
    HandoffForm,
    HandoffFormSet,
    ImportUploadForm,
    TriggerForm,
    TriggerFormSet,
    WorkflowCheck,
    names_to_release,
)
from contextadmin.models import (
    DatabaseVariable,
    DeclarativeVariable,
    DerivedVariable,
    EnvironmentVariable,
    Handoff,
    Trigger,
    Variable,
    Workflow,
)
from runs.engine.format import ConfigError

PENDING_IMPORT_KEY = "contextadmin.pending_import"


def _may_edit_workflows(request: HttpRequest) -> bool:
    user = request.user
    return user.has_perm("contextadmin.change_workflow") or user.has_perm(
        "contextadmin.add_workflow"
    )


class WorkflowPartInline:
    """Variables, triggers and hand-offs are edited as parts of their workflow."""

    extra = 0
    sortable_field_name = "position"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_edit_workflows(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_edit_workflows(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_edit_workflows(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_edit_workflows(request) or request.user.has_perm("contextadmin.view_workflow")


class DeclarativeInline(WorkflowPartInline, nested_admin.NestedTabularInline):
    model = DeclarativeVariable
    form = DeclarativeForm
    formset = DeclarativeFormSet
    sortable_excludes = ("type",)


class DatabaseInline(WorkflowPartInline, nested_admin.NestedTabularInline):
    model = DatabaseVariable
    form = DatabaseForm
    formset = DatabaseFormSet
    sortable_excludes = ("type",)


class EnvironmentInline(WorkflowPartInline, nested_admin.NestedTabularInline):
    model = EnvironmentVariable
    form = EnvironmentForm
    formset = EnvironmentFormSet
    sortable_excludes = ("type",)


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


@admin.register(Workflow)
class WorkflowAdmin(nested_admin.NestedModelAdmin):
    fields = ("name", "description", "database_name")
    inlines = [DeclarativeInline, DatabaseInline, EnvironmentInline, DerivedInline, HandoffInline]
    list_display = ("name", "short_description", "variable_count", "handoff_count", "updated")
    search_fields = ("name", "description")
    list_filter = ("updated",)

    class Media:
        css = {"all": ["contextadmin/admin.css"]}

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """Let whoever may delete a workflow delete its definitions with it.

        The variable, trigger and hand-off lists are read-only (they deny delete), and Django
        would otherwise refuse the cascade for want of those rights.
        """
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        owned = {str(model._meta.verbose_name) for model in (Variable, Trigger, Handoff)}
        return deleted, counts, perms_needed - owned, protected

    def get_queryset(self, request: HttpRequest) -> QuerySet[Workflow]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                variable_count=Count("variables", distinct=True),
                handoff_count=Count("handoffs", distinct=True),
            )
        )

    @admin.display(description="description")
    def short_description(self, obj: Workflow) -> str:
        return obj.description if len(obj.description) <= 80 else obj.description[:79] + "…"

    @admin.display(description="variables", ordering="variable_count")
    def variable_count(self, obj: Workflow) -> int:
        return obj.variable_count  # type: ignore[attr-defined]

    @admin.display(description="hand-offs", ordering="handoff_count")
    def handoff_count(self, obj: Workflow) -> int:
        return obj.handoff_count  # type: ignore[attr-defined]

    # -- validation: the whole workflow through schema.py ------------------------------------
    def _create_formsets(self, request: HttpRequest, obj: Any, change: bool) -> Any:
        formsets, inline_instances = super()._create_formsets(request, obj, change)
        if request.method == "POST":
            WorkflowCheck(
                workflow=obj,
                formsets=[
                    f
                    for f in formsets
                    if isinstance(f, DefinitionsFormSet) and not getattr(f, "is_nested", False)
                ],
            )
        return formsets, inline_instances

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        services.variable_names_release(
            workflow=form.instance, variable_ids=names_to_release(formsets)
        )
        super().save_related(request, form, formsets, change)

    # -- pages ---------------------------------------------------------------------------------
    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        base = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path("import/", wrap(self.import_view), name=f"{base}_import"),
            path("<path:object_id>/import/", wrap(self.import_view), name=f"{base}_import_into"),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        workflow = self.get_object(request, object_id)
        if workflow is not None:
            export_url = reverse("workflow-context-variables", args=[workflow.name])
            extra_context = {
                **(extra_context or {}),
                "export_url": export_url,
                "production_export_url": f"{export_url}?environment=production",
                "import_url": reverse(
                    "admin:contextadmin_workflow_import_into", args=[workflow.pk]
                ),
                "inspector_url": reverse("runs-workflow-preview", args=[workflow.name]),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def import_view(self, request: HttpRequest, object_id: str | None = None) -> HttpResponse:
        """Upload a context_variables.json, review the report and diff, then apply it."""
        workflow = self.get_object(request, object_id) if object_id else None
        if object_id and workflow is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        allowed = (
            self.has_change_permission(request, workflow)
            if workflow
            else self.has_add_permission(request)
        )
        if not allowed:
            raise PermissionDenied
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "workflow": workflow,
            "title": f"Import context_variables.json into {workflow}"
            if workflow
            else "Import context_variables.json",
            "max_bytes": settings.FILE_UPLOAD_MAX_MEMORY_SIZE,
        }
        if request.method == "POST" and request.POST.get("step") == "apply":
            return self._import_apply(request, context)
        form = ImportUploadForm(
            request.POST if request.method == "POST" else None,
            request.FILES if request.method == "POST" else None,
            initial={"name": workflow.name if workflow else ""},
        )
        if form.is_valid():
            name, data = form.cleaned_data["name"], form.cleaned_data["file"].read()
            self._import_preview(request, context, form, name=name, data=data)
        context["form"] = form
        return TemplateResponse(request, "admin/contextadmin/workflow/import.html", context)

    def _import_preview(
        self, request: HttpRequest, context: dict[str, Any], form: Any, *, name: str, data: bytes
    ) -> None:
        existing = Workflow.objects.filter(name=name).first()
        if existing and not self.has_change_permission(request, existing):
            form.add_error("name", "You may not change this workflow.")
            return
        try:
            result = services.workflow_import(name=name, data=data, replace=True, dry_run=True)
        except ConfigError as exc:
            context["issues"] = exc.issues
            return
        except services.ImportRefused as exc:
            form.add_error("name", str(exc))
            return
        token = secrets.token_urlsafe(16)
        # Kept server-side: the apply step trusts nothing from the client but this token.
        request.session[PENDING_IMPORT_KEY] = {
            "token": token,
            "name": name,
            "data": base64.b64encode(data).decode("ascii"),
            "diff": result.diff.lines(),
        }
        context.update(result=result, token=token, name=name, existing=existing)

    def _import_apply(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        pending = request.session.get(PENDING_IMPORT_KEY)
        if not pending or not constant_time_compare(
            pending["token"], request.POST.get("token", "")
        ):
            messages.error(
                request,
                "That upload is no longer pending (expired or replaced): upload the file again.",
            )
            return HttpResponseRedirect(request.path)
        name, data = pending["name"], base64.b64decode(pending["data"])
        existing = Workflow.objects.filter(name=name).first()
        if existing and not self.has_change_permission(request, existing):
            raise PermissionDenied
        form = ImportUploadForm(initial={"name": name})
        context["form"] = form
        try:
            preview = services.workflow_import(name=name, data=data, replace=True, dry_run=True)
            if preview.diff.lines() != pending["diff"]:
                # The definitions changed since the preview: show the new diff instead.
                messages.warning(
                    request, "The definitions changed since the preview; review the new diff."
                )
                self._import_preview(request, context, form, name=name, data=data)
                return TemplateResponse(request, "admin/contextadmin/workflow/import.html", context)
            result = services.workflow_import(name=name, data=data, replace=True)
        except ConfigError as exc:
            context["issues"] = exc.issues
            return TemplateResponse(request, "admin/contextadmin/workflow/import.html", context)
        except services.ImportRefused as exc:
            form.add_error("name", str(exc))
            return TemplateResponse(request, "admin/contextadmin/workflow/import.html", context)
        del request.session[PENDING_IMPORT_KEY]
        workflow = Workflow.objects.get(name=name)
        verb = "Created" if result.created else "Replaced the definitions of"
        messages.success(
            request, f"{verb} {name} from context_variables.json ({result.diff.summary()})."
        )
        for warning in result.warnings:
            messages.warning(request, warning)
        return HttpResponseRedirect(
            reverse("admin:contextadmin_workflow_change", args=[workflow.pk])
        )


# -- read-only lists: edits go through the workflow page, where the whole workflow is checked --
class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("contextadmin.view_workflow") or _may_edit_workflows(request)

    @admin.display(description="workflow", ordering="workflow__name")
    def workflow_link(self, obj: Any) -> str:
        workflow = obj.workflow
        url = reverse("admin:contextadmin_workflow_change", args=[workflow.pk])
        return format_html('<a href="{}">{}</a>', url, workflow.name)


@admin.register(Variable)
class VariableAdmin(ReadOnlyAdmin):
    list_display = ("name", "workflow_link", "category", "type", "position", "source")
    list_filter = ("workflow", "category", "type")
    search_fields = ("name", "description", "env_var", "collection", "field", "workflow__name")
    list_select_related = ("workflow",)
    ordering = ("workflow__name", "category", "position", "id")

    @admin.display(description="source / value")
    def source(self, obj: Variable) -> str:
        if obj.category == "database":
            return f"{obj.database_name or obj.workflow.database_name}.{obj.collection}.{obj.field}"
        if obj.category == "environment":
            return f"${obj.env_var}"
        if obj.category == "declarative":
            return repr(obj.value)
        return f"default {obj.default!r}"


@admin.register(Trigger)
class TriggerAdmin(ReadOnlyAdmin):
    list_display = (
        "variable",
        "workflow_link",
        "type",
        "agent",
        "equals",
        "count",
        "tool",
        "status",
    )
    list_filter = ("variable__workflow", "type")
    search_fields = ("variable__name", "agent", "tool", "equals")
    list_select_related = ("variable__workflow",)

    @admin.display(description="workflow", ordering="variable__workflow__name")
    def workflow_link(self, obj: Trigger) -> str:
        return super().workflow_link(obj.variable)


@admin.register(Handoff)
class HandoffAdmin(ReadOnlyAdmin):
    list_display = ("source_agent", "target_agent", "condition", "workflow_link", "position")
    list_filter = ("workflow",)
    search_fields = ("source_agent", "target_agent", "condition", "description")
    list_select_related = ("workflow",)
