"""The webhooks' admin: subscriptions with their recent deliveries (each attempt's status,
latency and first 500 bytes of the answer), "send a test event", "redeliver", and a secret
shown once, at creation or rotation, in that answer's body only (never a message, cookie or
redirect)."""

from __future__ import annotations

from typing import Any

from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from runs.webhooks import selectors
from runs.webhooks.models import EVENTS, Delivery, Subscription
from runs.webhooks.services import delivery as sending_service
from runs.webhooks.services.subscriptions import (
    secret_new,
    subscription_clean,
    subscription_secret_rotate,
)


class SubscriptionForm(forms.ModelForm):
    events = forms.MultipleChoiceField(
        choices=[(e, e) for e in EVENTS], widget=forms.CheckboxSelectMultiple
    )
    flags = forms.CharField(
        required=False, help_text="flag_flipped only for these flags, comma-separated (empty: all)"
    )
    end_statuses = forms.MultipleChoiceField(
        required=False,
        choices=[(s, s) for s in RUN_ENDED_STATUSES],
        widget=forms.CheckboxSelectMultiple,
        help_text="run_ended only for these statuses (none ticked: all)",
    )
    url = forms.CharField(max_length=2000, help_text="https:// (see docs/webhooks.md)")

    class Meta:
        model = Subscription
        fields = ("url", "workflow", "events", "flags", "end_statuses", "format", "enabled")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["flags"] = ", ".join(self.instance.flags)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            data.update(
                subscription_clean(
                    url=data.get("url", ""),
                    events=list(data.get("events") or []),
                    flags=data.get("flags", ""),
                    end_statuses=list(data.get("end_statuses") or []),
                    format=data.get("format", "standard"),
                    workflow=data.get("workflow"),
                )
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                if field not in self.errors:
                    self.add_error(field, errors)
        return data


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    form = SubscriptionForm
    list_display = ("url", "workflow", "event_names", "format", "enabled", "failures_24h")
    list_filter = ("enabled", "format", "workflow")
    search_fields = ("url",)
    readonly_fields = ("created_at", "failing_since", "disabled_reason", "failures_24h", "tools",
                       "deliveries")

    def get_fields(self, request: HttpRequest, obj: Subscription | None = None) -> list[str]:
        fields = ["url", "workflow", "events", "flags", "end_statuses", "format", "enabled"]
        if obj is None:
            return fields
        return [*fields, "created_at", "failing_since", "disabled_reason", "failures_24h",
                "tools", "deliveries"]

    @admin.display(description="events")
    def event_names(self, obj: Subscription) -> str:
        return ", ".join(obj.events)

    @admin.display(description="failed attempts (24 h)")
    def failures_24h(self, obj: Subscription) -> int:
        return selectors.subscription_failures_24h(subscription=obj)

    @admin.display(description="actions")
    def tools(self, obj: Subscription) -> SafeString:
        return SafeString(render_to_string("admin/webhooks/subscription/tools.html", {"obj": obj}))

    @admin.display(description="recent deliveries")
    def deliveries(self, obj: Subscription) -> SafeString:
        rows = selectors.subscription_recent_deliveries(subscription=obj)
        return SafeString(
            render_to_string("admin/webhooks/subscription/deliveries.html", {"deliveries": rows})
        )

    def save_model(self, request: HttpRequest, obj: Subscription, form: Any, change: bool) -> None:
        obj.flags = form.cleaned_data["flags"]
        if not change:
            obj.secret = secret_new()
            obj._secret = obj.secret  # type: ignore[attr-defined]  # for response_add only
        if change and obj.enabled and "enabled" in form.changed_data:  # switched back on
            obj.disabled_reason, obj.failing_since = "", None
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: Subscription, post_url_continue: str | None = None
    ) -> HttpResponse:
        secret = getattr(obj, "_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        return self._secret_page(request, obj, secret, created=True)

    def _secret_page(
        self, request: HttpRequest, obj: Subscription, secret: str, *, created: bool
    ) -> HttpResponse:
        """The secret, in this response's body only, not cached."""
        response = TemplateResponse(
            request,
            "admin/webhooks/subscription/secret.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "subscription": obj,
                "secret": secret,
                "created": created,
                "title": "Webhook signing secret",
            },
        )
        response["Cache-Control"] = "no-store"
        return response

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/test/", wrap(require_POST(self.test_view)), name="webhooks_test"),
            path("<int:pk>/rotate/", wrap(require_POST(self.rotate_view)), name="webhooks_rotate"),
            path(
                "delivery/<int:pk>/redeliver/",
                wrap(require_POST(self.redeliver_view)),
                name="webhooks_redeliver",
            ),
            *super().get_urls(),
        ]

    def _change_url(self, pk: int) -> str:
        return reverse("admin:webhooks_subscription_change", args=[pk])

    def test_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        obj = get_object_or_404(Subscription, pk=pk)
        if not self.has_change_permission(request, obj):
            return HttpResponse(status=403)
        delivery = sending_service.subscription_test_send(subscription=obj)
        self._queued_message(request, obj, f"Test event {delivery.message_id} queued.")
        return HttpResponseRedirect(self._change_url(pk))

    def rotate_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        obj = get_object_or_404(Subscription, pk=pk)
        if not self.has_change_permission(request, obj):
            return HttpResponse(status=403)
        revoke = request.POST.get("revoke") == "1"  # a leaked secret: no overlap
        secret = subscription_secret_rotate(subscription=obj, revoke=revoke)
        return self._secret_page(request, obj, secret, created=False)

    def redeliver_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        delivery = get_object_or_404(Delivery, pk=pk)
        if not self.has_change_permission(request, delivery.subscription):
            return HttpResponse(status=403)
        sending_service.delivery_redeliver(delivery=delivery)
        self._queued_message(
            request, delivery.subscription, f"Delivery {delivery.message_id} queued again."
        )
        return HttpResponseRedirect(self._change_url(delivery.subscription_id))

    def _queued_message(self, request: HttpRequest, obj: Subscription, text: str) -> None:
        """Say that it was queued, and when a switched-off subscription holds it back: it
        goes out only once switched on, so "queued" alone would promise a send that waits."""
        if obj.enabled:
            self.message_user(request, text, messages.SUCCESS)
            return
        self.message_user(
            request,
            f"{text} The subscription is switched off: nothing is sent to it until it is "
            "switched back on (tick Enabled and save).",
            messages.WARNING,
        )
