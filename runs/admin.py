from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from runs import tokens
from runs.models import ApiToken, Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "workflow_name",
        "enterprise_id",
        "environment",
        "status",
        "last_seq",
        "flip_count",
        "started_at",
    )
    list_display += ("open_in_inspector",)
    list_filter = ("workflow_name", "status", "environment")
    search_fields = ("id", "enterprise_id", "workflow_name")
    readonly_fields = ["open_in_inspector", *(f.name for f in Run._meta.fields)]
    date_hierarchy = "started_at"

    @admin.display(description="Inspector")
    def open_in_inspector(self, obj: Run) -> str:
        url = reverse("runs-detail", args=[obj.pk])
        return format_html('<a href="{}">Open in inspector</a>', url)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs are started by runtimes through the API

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "workflow", "prefix", "created_at", "last_used_at", "revoked")
    list_filter = ("revoked", "workflow")
    search_fields = ("name", "prefix")
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        return (
            ("name", "workflow")
            if obj is None
            else ("name", "workflow", "prefix", "created_at", "last_used_at", "revoked")
        )

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else ("name", "workflow", "prefix", "created_at", "last_used_at")

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        token, secret = tokens.api_token_create(name=obj.name, workflow=obj.workflow)
        obj.pk, obj.prefix, obj.secret_hash, obj.created_at = (
            token.pk,
            token.prefix,
            token.secret_hash,
            token.created_at,
        )
        obj._state.adding = False
        obj._secret = secret  # for response_add, on this request's object only

    def response_add(self, request, obj, post_url_continue=None) -> HttpResponse:
        """Show the new token's secret in the answer to the POST that created it: never in
        the session, the messages cookie or a redirect, so it travels once, in this body."""
        secret = getattr(obj, "_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        response = TemplateResponse(
            request,
            "admin/runs/apitoken/secret.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "token": obj,
                "secret": secret,
                "title": f"Token {obj.name} created",
            },
        )
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        for token in queryset:
            tokens.api_token_revoke(token=token)
        self.message_user(request, f"Revoked {queryset.count()} token(s).")
