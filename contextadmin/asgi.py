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


def daphne_tune() -> None:
    """Switch off two things Twisted does for every request that Daphne never uses.

    - Daphne hands each request's raw body to the application and never reads Twisted's
      ``request.args``, yet Twisted parses every POST's Content-Type with the ``email`` package
      (a quarter of a bare Daphne's CPU per POST here: docs/benchmarks.md, B1) and a form or
      multipart body into ``args``. Twisted's switch for it, ``parsePOSTFormSubmission``, is a
      constructor argument Daphne does not pass: fix its value on Daphne's request class.
    - Twisted formats an access-log line for every request into its own log, which Daphne
      discards (verbosity <= 1) or passes on as a second copy of its own access log.
    """
    try:
        from daphne.http_protocol import HTTPFactory, WebRequest
    except ImportError:  # not served by Daphne
        return
    WebRequest._parsePOSTFormSubmission = property(lambda self: False, lambda self, value: None)
    HTTPFactory.log = lambda self, request: None


daphne_tune()

# What is loaded by now lives as long as the process: move it out of the collector's sight, so
# a full collection scans only newer objects (it paused a Daphne 50-90 ms; docs/benchmarks.md).
gc.freeze()
