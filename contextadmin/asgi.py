"""ASGI entry point: HTTP through Django, websockets through Channels (see runs/routing.py)."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextadmin.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (needs the app registry)
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from runs.routing import http_application, websocket_application  # noqa: E402

# Daphne serves no static files: the inspector's CSS/JS (and the admin's) come through Django.
# The runtime's event POSTs skip Django's request handler (runs.routing.http_application).
application = ProtocolTypeRouter(
    {
        "http": http_application(ASGIStaticFilesHandler(django_asgi_app)),
        "websocket": websocket_application,
    }
)

# What is loaded by now lives as long as the process: move it out of the collector's sight, so
# a full collection scans only newer objects (it paused a Daphne 50-90 ms; docs/benchmarks.md).
gc.freeze()
