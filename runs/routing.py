"""Websocket routes: ingest (token auth, no Origin needed) and inspectors (staff, same origin)."""

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from runs.consumers import IngestConsumer, RunConsumer, RunListConsumer


def staff_socket(consumer):
    """Wrap an inspector consumer: same-origin only, with the Django session's user."""
    return AllowedHostsOriginValidator(AuthMiddlewareStack(consumer))


websocket_application = URLRouter(
    [
        path("ws/ingest/<str:run_id>/", IngestConsumer.as_asgi()),
        path("ws/runs/", staff_socket(RunListConsumer.as_asgi())),
        path("ws/runs/<str:run_id>/", staff_socket(RunConsumer.as_asgi())),
    ]
)
