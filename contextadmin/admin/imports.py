"""Importing a context_variables.json into a workflow: upload, the report and the diff, then
apply (kept in the session between the two steps)."""

from __future__ import annotations

import base64
import secrets
from typing import Any

from contextadmin_sdk.engine.format import ConfigError
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.crypto import constant_time_compare

from contextadmin import selectors, services, specs
from contextadmin.admin.versions import version_saved_message
from contextadmin.forms import (
    ImportUploadForm,
)
from contextadmin.models import (
    Workflow,
)

PENDING_IMPORT_KEY = "contextadmin.pending_import"


class WorkflowImportMixin:
    """Import into a workflow: upload, the report and diff, then apply."""

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
        if result.unchanged is not None:
            messages.info(
                request,
                f"{name} already has exactly these definitions (version "
                f"{result.unchanged.number}): nothing changed, no new version.",
            )
        else:
            messages.success(
                request, f"{verb} {name} from context_variables.json ({result.diff.summary()})."
            )
        if result.version is not None:
            messages.info(request, version_saved_message(workflow, result.version))
        for warning in result.warnings:
            messages.warning(request, warning)
        return HttpResponseRedirect(
            reverse("admin:contextadmin_workflow_change", args=[workflow.pk])
        )




def _issues_named(exc: ConfigError, data: bytes) -> list[dict[str, str]]:
    """Each problem with its full JSON path (``issue.path``, as in the file) and the
    definition it falls in: ``context_variables.declarative_variables[0].value``, ``max_items``."""
    document = specs.decoded_document(data)
    return [
        {
            "path": issue.path,
            "subject": specs.issue_subject(issue.loc, document),
            "message": issue.message,
        }
        for issue in exc.issues
    ]
