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
from django.db.models.functions import Coalesce, Greatest
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.crypto import constant_time_compare
from django.utils.html import format_html

from contextadmin import impact, recent_runs, selectors, services, specs
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
    WorkflowForm,
    names_to_release,
)
from contextadmin.models import (
    DatabaseVariable,
    DeclarativeVariable,
    DerivedVariable,
    EnvironmentVariable,
    Handoff,
    OutputMapping,
    Trigger,
    Variable,
    VersionAction,
    Workflow,
    WorkflowVersion,
)
from contextadmin.output_forms import OutputMappingForm, OutputMappingFormSet
from contextadmin.workflow_page_rules import workflow_page_rules
from runs.engine import format as fmt
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


class OutputMappingInline(WorkflowPartInline, nested_admin.NestedTabularInline):
    model = OutputMapping
    form = OutputMappingForm
    formset = OutputMappingFormSet


@admin.register(Workflow)
class WorkflowAdmin(nested_admin.NestedModelAdmin):
    form = WorkflowForm
    fields = ("name", "description", "database_name", "version_comment", "base_version")
    inlines = [
        DeclarativeInline, DatabaseInline, EnvironmentInline, DerivedInline, HandoffInline,
        OutputMappingInline,
    ]
    list_display = ("name", "short_description", "variable_count", "handoff_count", "updated")
    search_fields = ("name", "description")
    list_filter = ("updated",)

    class Media:
        css = {"all": ["contextadmin/admin.css"]}
        js = ["contextadmin/workflow.js"]

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """Let whoever may delete a workflow delete its definitions with it.

        The variable, trigger and hand-off lists are read-only (they deny delete), and Django
        would otherwise refuse the cascade for want of those rights.
        """
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        owned = {
            str(model._meta.verbose_name)
            for model in (Variable, Trigger, Handoff, OutputMapping, WorkflowVersion)
        }
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
            messages.info(request, _version_saved_message(form.instance, version))

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

    # -- versions: history, diff, revert, approval ----------------------------------------------
    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """List the versions and show the value-level diff between any two of them.

        Reads stored exports only: a constant number of queries whatever the workflow's size.
        """
        workflow = self.get_object(request, object_id)
        if workflow is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_or_change_permission(request, workflow):
            raise PermissionDenied
        versions = selectors.workflow_versions(workflow=workflow)
        head = versions[0] if versions else None
        published = next((v for v in versions if v.pk == workflow.published_version_id), None)
        to_number = _int_param(request, "to", head.number if head else 0)
        default_from = (
            published.number
            if published is not None
            and head is not None
            and to_number == head.number
            and published.number < head.number
            else to_number - 1
        )
        from_number = _int_param(request, "from", default_from)
        chosen = {
            v.number: v
            for v in WorkflowVersion.objects.filter(
                workflow=workflow, number__in=[from_number, to_number]
            ).select_related("author", "approved_by")
        }
        after, before = chosen.get(to_number), chosen.get(from_number)
        for version in versions:
            version.status = selectors.version_status(workflow=workflow, version=version)
        may_change = self.has_change_permission(request, workflow)
        can_approve = (
            may_change
            and after is not None
            and head is not None
            and after.number == head.number
            and workflow.published_version_id != after.pk
        )
        # "Revert to this" asks first: ?revert=N shows head → N (what the revert changes) and
        # the form that does it
        revert = _int_param(request, "revert", 0)
        confirm_revert = (
            may_change
            and head is not None
            and after is not None
            and revert == after.number != head.number
            and before is not None
            and before.number == head.number
        )
        impact_report, impact_error = None, ""
        if after is not None and request.GET.get("impact") == "1":
            impact_report, impact_error = _impact_of(workflow=workflow, version=after)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"History of {workflow.name}",
            "impact": impact_report,
            "impact_error": impact_error,
            "impact_available": impact.run_source() is not None,
            "subtitle": None,
            "workflow": workflow,
            "object": workflow,
            "versions": versions,
            "head": head,
            "published": published,
            "before": before,
            "after": after,
            "from_number": from_number,
            "to_number": to_number,
            "diff": selectors.versions_diff(before=before, after=after) if after else None,
            "may_change": may_change,
            "can_approve": can_approve,
            "confirm_revert": confirm_revert,
            "own_draft": can_approve and after.author_id == request.user.pk,
            "review_required": selectors.review_required(),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/contextadmin/workflow/history.html", context)

    def _version_action_target(
        self, request: HttpRequest, object_id: str
    ) -> tuple[Workflow, int | None]:
        if request.method != "POST":
            raise PermissionDenied
        workflow = self.get_object(request, object_id)
        if workflow is None or not self.has_change_permission(request, workflow):
            raise PermissionDenied
        base = request.POST.get("base_version", "")
        return workflow, int(base) if base.isdigit() else None

    def revert_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        """Make an old version the newest again: a new version (a draft under review)."""
        workflow, base = self._version_action_target(request, object_id)
        history = reverse("admin:contextadmin_workflow_history", args=[workflow.pk])
        try:
            version = services.workflow_version_revert(
                workflow=workflow,
                number=number,
                user=request.user,
                base=base,
                comment=request.POST.get("comment", "").strip()[:1000],
            )
        except services.StaleEdit as exc:
            messages.error(request, f"Not reverted: {exc}")
            return HttpResponseRedirect(history)
        except (services.ImportRefused, ConfigError) as exc:
            messages.error(request, f"Version {number} cannot be restored: {exc}")
            return HttpResponseRedirect(history)
        messages.success(
            request,
            f"Reverted to version {number}: " + _version_saved_message(workflow, version),
        )
        return HttpResponseRedirect(f"{history}?to={version.number}")

    def approve_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        """Approve the newest draft (another staff user's) and publish it."""
        workflow, base = self._version_action_target(request, object_id)
        history = reverse("admin:contextadmin_workflow_history", args=[workflow.pk])
        try:
            services.workflow_version_approve(
                workflow=workflow,
                number=number,
                user=request.user,
                comment=request.POST.get("comment", "").strip()[:1000],
                base=base,
            )
        except (services.ReviewRefused, services.StaleEdit) as exc:
            messages.error(request, f"Not approved: {exc}")
            return HttpResponseRedirect(f"{history}?to={number}")
        messages.success(request, f"Approved version {number}: it is now published.")
        return HttpResponseRedirect(f"{history}?to={number}")

    def version_download_view(
        self, request: HttpRequest, object_id: str, number: int
    ) -> HttpResponse:
        """Download one version's stored export (``?environment=production`` for that variant)."""
        workflow = self.get_object(request, object_id)
        if workflow is None or not self.has_view_or_change_permission(request, workflow):
            raise PermissionDenied
        environment = request.GET.get("environment", "development")
        try:
            exported = selectors.workflow_export_version(
                workflow=workflow, environment=environment, version=number
            )
        except (selectors.UnknownEnvironment, selectors.VersionNotFound) as exc:
            return HttpResponse(str(exc), status=404 if "version" in str(exc) else 400)
        variant = ".production" if environment == "production" else ""
        response = HttpResponse(exported.body, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="{workflow.name}.v{number}{variant}.context_variables.json"'
        )
        response["Cache-Control"] = "private, no-cache"
        response["ETag"] = exported.etag
        response["X-Context-Version"] = str(number)
        return response

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
            context["issues"] = _issues_named(exc, data)
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
            # The import counts as a save: applying it after someone else saved is refused.
            "base": selectors.workflow_head_number(workflow=existing) if existing else None,
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
        head = selectors.workflow_head(workflow=existing) if existing else None
        if head is not None and pending.get("base") is not None and head.number != pending["base"]:
            # Saved (or imported, or reverted) since the preview: say who and when, show what.
            stale = services.StaleEdit(workflow=existing, base=pending["base"], current=head)
            context.update(stale=stale, stale_diff=stale.diff())
            self._import_preview(request, context, form, name=name, data=data)
            return TemplateResponse(request, "admin/contextadmin/workflow/import.html", context)
        try:
            preview = services.workflow_import(name=name, data=data, replace=True, dry_run=True)
            if preview.diff.lines() != pending["diff"]:
                # The definitions changed since the preview: show the new diff instead.
                messages.warning(
                    request, "The definitions changed since the preview; review the new diff."
                )
                self._import_preview(request, context, form, name=name, data=data)
                return TemplateResponse(request, "admin/contextadmin/workflow/import.html", context)
            result = services.workflow_import(
                name=name,
                data=data,
                replace=True,
                user=request.user,
                base=pending.get("base"),
                comment=request.POST.get("comment", "").strip()[:1000],
            )
        except services.StaleEdit as exc:
            context["stale"] = exc
            context["stale_diff"] = exc.diff()
            self._import_preview(request, context, form, name=name, data=data)
            return TemplateResponse(request, "admin/contextadmin/workflow/import.html", context)
        except ConfigError as exc:
            context["issues"] = _issues_named(exc, data)
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
        if result.version is not None:
            messages.info(request, _version_saved_message(workflow, result.version))
        for warning in result.warnings:
            messages.warning(request, warning)
        return HttpResponseRedirect(
            reverse("admin:contextadmin_workflow_change", args=[workflow.pk])
        )


def _issues_named(exc: ConfigError, data: bytes) -> list[dict[str, str]]:
    """Each problem with its path naming the variable: ``declarative_variables[0] (max_items)``."""
    document = specs.decoded_document(data)
    return [
        {"path": specs.issue_path_label(issue.loc, document), "message": issue.message}
        if issue.loc
        else {"path": "", "message": issue.message}
        for issue in exc.issues
    ]


def _impact_of(
    *, workflow: Workflow, version: WorkflowVersion
) -> tuple[impact.ImpactReport | None, str]:
    """Replay the workflow's recent runs under ``version`` (bounded: 100 runs, 10 s)."""
    source = impact.run_source()
    if source is None:
        return None, "No recorded runs to replay here."
    try:
        candidate = fmt.parse_config(version.export).config
    except ConfigError as exc:
        return None, f"Version {version.number} breaks the format: {exc}"
    report = impact.impact_replay(
        runs=source(workflow_name=workflow.name, limit=impact.DEFAULT_RUNS),
        candidate=candidate,
        time_budget_s=10.0,
    )
    return report, ""


def _int_param(request: HttpRequest, name: str, default: int) -> int:
    value = request.GET.get(name, "")
    return int(value) if value.isdigit() and len(value) < 10 else default


def _version_saved_message(workflow: Workflow, version: WorkflowVersion) -> str:
    if version.published_at is not None:  # just recorded: published at once (review off)
        return f"Saved as version {version.number}, published."
    return (
        f"Saved as version {version.number}, a draft: pipelines and new runs keep the "
        "published version until another staff user approves it (History)."
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
