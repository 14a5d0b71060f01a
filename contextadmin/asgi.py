"""ASGI entry point: HTTP through Django but for the events POST, which has an ASGI path of
its own, and websockets through Channels (both routed by runs/routing.py). Project wiring: it
assembles the definitions app and the runs app.

Start-up, in order: Django's set-up, the application, then ``gc_freeze_loaded``.
"""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextadmin.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (needs the app registry)
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from runs.routing import http_application, websocket_application  # noqa: E402

# Daphne serves no static files: the inspector's CSS/JS (and the admin's) come through Django.
application = ProtocolTypeRouter(
    {
        "http": ASGIStaticFilesHandler(http_application(django_asgi_app)),
        "websocket": websocket_application,
    }
)


def gc_freeze_loaded() -> None:
    """Start-up step: load the URLconf (and with it every view), then move everything loaded
    so far out of the cyclic collector's sight. It lives as long as the process, and a full
    collection then scans only newer objects: shorter pauses (docs/benchmarks.md)."""
    get_resolver().url_patterns  # noqa: B018  (imports the views now, not on a first request)
    gc.freeze()


gc_freeze_loaded()
