"""The workflow page's versions: History (a coloured diff and what the change would do to
recorded runs), revert, a second operator's approval, and each version's download."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextadmin_sdk.engine import format as fmt
from contextadmin_sdk.engine.format import ConfigError
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from contextadmin import impact, selectors, services
from contextadmin.models import (
    Workflow,
    WorkflowVersion,
)

# The History page posts the version it showed; a post without it could undo a newer one unseen.
BASE_MISSING = (
    "the request did not say which version the page showed (base_version): reload History and "
    "try again; nothing changed"
)


@dataclass(frozen=True)
class _VersionAction:
    """A version action's post, checked: what the revert and approve services both take
    (the workflow, who acts, the page's base version, the comment) and the History to go to."""

    arguments: dict[str, Any]
    history: str


class WorkflowVersionsMixin:
    """The workflow's versions: History with its diff and impact, revert, approval, and each
    version's download."""

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
        newest = head.number if head else 0
        problems: list[str] = []
        to_number = _version_param(request, "to", newest, newest=newest, problems=problems)
        default_from = (
            published.number
            if published is not None
            and head is not None
            and to_number == head.number
            and published.number < head.number
            else to_number - 1
        )
        from_number = _version_param(
            request, "from", default_from, newest=newest, problems=problems
        )
        for problem in problems:  # a hand-edited or stale link: say what is shown instead
            messages.warning(request, problem)
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
        self, request: HttpRequest, object_id: str, number: int, *, verb: str
    ) -> _VersionAction | HttpResponse:
        """A version action's post, checked, or the answer already: History for a link (a
        GET acts on nothing), a refusal for a post without the version its page showed as
        the newest (``base_version``: a stale page is refused)."""
        if request.method == "GET":
            return self._version_action_asked(request, object_id, number, revert=verb == "reverted")
        if request.method != "POST":
            raise PermissionDenied
        workflow = self.get_object(request, object_id)
        if workflow is None or not self.has_change_permission(request, workflow):
            raise PermissionDenied
        history = reverse("admin:contextadmin_workflow_history", args=[workflow.pk])
        base = request.POST.get("base_version", "")
        if not (base.isascii() and base.isdigit()):
            messages.error(request, f"Not {verb}: {BASE_MISSING}")
            return HttpResponseRedirect(f"{history}?to={number}")
        comment = request.POST.get("comment", "").strip()[:1000]
        arguments = {"workflow": workflow, "user": request.user, "base": int(base)}
        return _VersionAction(arguments={**arguments, "comment": comment}, history=history)

    def _version_action_asked(
        self, request: HttpRequest, object_id: str, number: int, *, revert: bool
    ) -> HttpResponse:
        """A version action reached by a link (the login page's return to a post that found the
        session expired, a reload, a bookmark) acts on nothing: History shows the version and,
        for a revert, asks first."""
        workflow = self.get_object(request, object_id)
        if workflow is None or not self.has_view_or_change_permission(request, workflow):
            raise PermissionDenied
        history = reverse("admin:contextadmin_workflow_history", args=[workflow.pk])
        if not revert:
            return HttpResponseRedirect(f"{history}?to={number}#version-diff")
        head = selectors.workflow_head_number(workflow=workflow)
        return HttpResponseRedirect(
            f"{history}?from={head}&to={number}&revert={number}#version-diff"
        )

    def revert_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        """Make an old version the newest again: a new version (a draft under review)."""
        action = self._version_action_target(request, object_id, number, verb="reverted")
        if isinstance(action, HttpResponse):
            return action
        try:
            version = services.workflow_version_revert(number=number, **action.arguments)
        except services.StaleEdit as exc:
            messages.error(request, f"Not reverted: {exc}")
            return HttpResponseRedirect(action.history)
        except (services.ImportRefused, ConfigError) as exc:
            messages.error(request, f"Version {number} cannot be restored: {exc}")
            return HttpResponseRedirect(action.history)
        workflow = action.arguments["workflow"]
        messages.success(
            request,
            f"Reverted to version {number}: " + version_saved_message(workflow, version),
        )
        return HttpResponseRedirect(f"{action.history}?to={version.number}")

    def approve_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        """Approve the newest draft (another staff user's) and publish it."""
        action = self._version_action_target(request, object_id, number, verb="approved")
        if isinstance(action, HttpResponse):
            return action
        shown = f"{action.history}?to={number}"
        try:
            services.workflow_version_approve(number=number, **action.arguments)
        except (services.ReviewRefused, services.StaleEdit) as exc:
            messages.error(request, f"Not approved: {exc}")
            return HttpResponseRedirect(shown)
        messages.success(request, f"Approved version {number}: it is now published.")
        return HttpResponseRedirect(shown)

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
    return int(value) if value.isascii() and value.isdigit() and len(value) < 10 else default


def _version_param(
    request: HttpRequest, name: str, default: int, *, newest: int, problems: list[str]
) -> int:
    """A version number from the query (History's ``to``/``from``), else ``default``, with
    a problem saying why when one was given that names no version."""
    raw = request.GET.get(name, "")
    if not raw:
        return default
    number = _int_param(request, name, -1)
    if not 1 <= number <= newest:
        known = f"versions 1 to {newest}" if newest else "no versions yet"
        shown = f"version {default}" if default > 0 else "nothing"
        problems.append(f"The link's {name}={raw[:20]} names no version ({known}): showing {shown}")
        return default
    return number


def version_saved_message(workflow: Workflow, version: WorkflowVersion) -> str:
    if version.published_at is not None:  # just recorded: published at once (review off)
        return f"Saved as version {version.number}, published."
    return (
        f"Saved as version {version.number}, a draft: pipelines and new runs keep the "
        "published version until another staff user approves it (History)."
    )
