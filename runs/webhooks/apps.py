from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "runs.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Needs the app registry (the receivers write models), so imported here.
        from contextadmin.signals import version_published
        from runs.signals import events_stored, run_stored
        from runs.webhooks.services import outbox

        events_stored.connect(outbox.events_stored_receive, dispatch_uid="webhooks.events")
        run_stored.connect(outbox.run_stored_receive, dispatch_uid="webhooks.run")
        version_published.connect(outbox.version_published_receive, dispatch_uid="webhooks.ver")
        outbox.subscriptions_cache_connect()
