"""The workflow page: the definitions of one workflow edited together, validated as one document
on save, with its versions and import pages (the mixins beside this module)."""

from __future__ import annotations

from typing import Any

import nested_admin
from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import path, reverse

from contextadmin import recent_runs, selectors, services
from contextadmin.admin.imports import WorkflowImportMixin
from contextadmin.admin.inlines import (
    DatabaseInline,
    DeclarativeInline,
    DerivedInline,
    EnvironmentInline,
    HandoffInline,
    OutputMappingInline,
    TriggerInline,
)
from contextadmin.admin.merge import stale_post_merge
from contextadmin.admin.versions import WorkflowVersionsMixin, version_saved_message
from contextadmin.forms import (
    DefinitionsFormSet,
    WorkflowCheck,
    WorkflowForm,
    names_to_release,
)
from contextadmin.models import WORKFLOW_PARTS, VersionAction, Workflow
from contextadmin.workflow_page_rules import workflow_page_rules


@admin.register(Workflow)
class WorkflowAdmin(WorkflowImportMixin, WorkflowVersionsMixin, nested_admin.NestedModelAdmin):
    form = WorkflowForm
    fields = ("name", "description", "database_name", "version_comment", "base_version")
    inlines = [
        DeclarativeInline,
        DatabaseInline,
        EnvironmentInline,
        DerivedInline,
        HandoffInline,
        OutputMappingInline,
    ]
    list_display = ("name", "short_description", "variable_count", "handoff_count", "updated")
    search_fields = ("name", "description")
    list_filter = ("updated",)

    class Media:
        css = {"all": ["contextadmin/admin.css"]}
        js = ["contextadmin/workflow.js", "contextadmin/reorder.js"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """The change note and the page's version are for saving: not on a view-only page."""
        fields = super().get_fields(request, obj)
        if obj is None or self.has_change_permission(request, obj):
            return fields
        return [field for field in fields if field not in ("version_comment", "base_version")]

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """Let whoever may delete a workflow delete its definitions with it.

        The variable, trigger and hand-off lists are read-only (they deny delete), and Django
        would otherwise refuse the cascade for want of those rights.
        """
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        owned = {str(model._meta.verbose_name) for model in WORKFLOW_PARTS}
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
            request.workflow_check = WorkflowCheck(  # type: ignore[attr-defined]
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
        version = services.workflow_version_record(
            workflow=form.instance,
            user=request.user,
            action=VersionAction.SAVE if change else VersionAction.CREATE,
            comment=form.cleaned_data.get("version_comment", ""),
            skip_unchanged=change,
        )
        if version is not None:
            messages.info(request, version_saved_message(form.instance, version))

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        context["workflow_rules"] = workflow_page_rules()
        check = getattr(request, "workflow_check", None)
        if check is not None:
            check.run()
            context["document_issues"] = check.labels
        stale = getattr(context["adminform"].form, "stale", None)
        if stale is not None:
            context["stale"] = stale
            context["stale_diff"] = stale.diff()
        return super().render_change_form(request, context, *args, **kwargs)

    # -- pages ---------------------------------------------------------------------------------
    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        base = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path("import/", wrap(self.import_view), name=f"{base}_import"),
            path("<path:object_id>/import/", wrap(self.import_view), name=f"{base}_import_into"),
            path(
                "<path:object_id>/history/<int:number>/revert/",
                wrap(self.revert_view),
                name=f"{base}_revert",
            ),
            path(
                "<path:object_id>/history/<int:number>/approve/",
                wrap(self.approve_view),
                name=f"{base}_approve",
            ),
            path(
                "<path:object_id>/history/<int:number>/context_variables.json",
                wrap(self.version_download_view),
                name=f"{base}_version_download",
            ),
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
        if workflow is not None and request.method == "POST":
            merged = stale_post_merge(
                post=request.POST,
                workflow=workflow,
                workflow_form=self.form,
                row_forms={
                    **{inline.formset.key: inline.form for inline in self.inlines},
                    "triggers": TriggerInline.form,  # nested under each derived variable
                },
            )
            if merged is not None:  # refused as stale below; shown with both operators' edits
                request.POST = merged
        if workflow is not None:
            head = selectors.workflow_head(workflow=workflow)
            if head is not None:  # the version this page shows, named after workflow and variant
                export_url = reverse(
                    "admin:contextadmin_workflow_version_download", args=[workflow.pk, head.number]
                )
            else:
                export_url = reverse("workflow-context-variables", args=[workflow.name])
            variant = f".v{head.number}" if head else ""
            extra_context = {
                **(extra_context or {}),
                "export_url": export_url,
                "production_export_url": f"{export_url}?environment=production",
                "import_url": reverse(
                    "admin:contextadmin_workflow_import_into", args=[workflow.pk]
                ),
                "inspector_url": reverse("runs-workflow-preview", args=[workflow.name]),
                "download_name": f"{workflow.name}{variant}.context_variables.json",
                "production_download_name": (
                    f"{workflow.name}{variant}.production.context_variables.json"
                ),
                "head_version": head,
                "production_warnings": selectors.production_warnings(
                    document=selectors.version_document(version=head)
                )
                if head is not None
                else [],
                "published_version": workflow.published_version,
                "review_required": selectors.review_required(),
                # from the runs app, which registers the source (contextadmin.recent_runs)
                "runs_by_version": recent_runs.runs_by_version(workflow_name=workflow.name),
            }
        return super().change_view(request, object_id, form_url, extra_context)
