"""Read-only lists of the definitions and of recent changes: edits go through the workflow
page, where the whole workflow is checked."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.db.models.functions import Coalesce, Greatest
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from contextadmin.admin.inlines import may_edit_workflows
from contextadmin.models import (
    Handoff,
    Trigger,
    Variable,
    WorkflowVersion,
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
        return request.user.has_perm("contextadmin.view_workflow") or may_edit_workflows(request)

    @admin.display(description="workflow", ordering="workflow__name")
    def workflow_link(self, obj: Any) -> str:
        workflow = obj.workflow
        url = reverse("admin:contextadmin_workflow_change", args=[workflow.pk])
        return format_html('<a href="{}">{}</a>', url, workflow.name)


@admin.register(WorkflowVersion)
class RecentChangesAdmin(ReadOnlyAdmin):
    """The audit trail: every save, import, revert and approval across all workflows."""

    list_display = (
        "created",
        "workflow_link",
        "version_link",
        "action",
        "who",
        "comment",
        "review",
    )
    list_display_links = None
    list_filter = ("action", "workflow")
    search_fields = ("workflow__name", "author_name", "approved_by_name", "comment")
    list_select_related = ("workflow",)
    ordering = ("-created", "-pk")
    date_hierarchy = "created"

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkflowVersion]:
        # Newest activity first: a version rises to the top again when it is approved.
        return (
            WorkflowVersion._default_manager.defer("export", "export_production")
            .annotate(activity=Greatest("created", Coalesce("approved_at", "created")))
            .order_by(*self.get_ordering(request))
        )

    def get_ordering(self, request: HttpRequest) -> list[str]:
        return ["-activity", "-pk"]

    @admin.display(description="version", ordering="number")
    def version_link(self, obj: WorkflowVersion) -> str:
        url = reverse("admin:contextadmin_workflow_history", args=[obj.workflow_id])
        return format_html('<a href="{}?to={}">version {}</a>', url, obj.number, obj.number)

    @admin.display(description="by")
    def who(self, obj: WorkflowVersion) -> str:
        if obj.reverted_from:
            return f"{obj.who} (to version {obj.reverted_from})"
        return obj.who

    @admin.display(description="review")
    def review(self, obj: WorkflowVersion) -> str:
        if obj.approved_at:
            when = obj.approved_at.strftime("%Y-%m-%d %H:%M")
            note = f": {obj.approval_comment}" if obj.approval_comment else ""
            return f"approved by {obj.approved_by_name} at {when}{note}"
        if obj.workflow.published_version_id == obj.pk:
            return "published"
        return "published earlier" if obj.published_at else "not published"


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
