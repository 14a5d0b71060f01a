"""The ASGI application with every HTTP request through Django's handler, the events POST
included: as before the POST had an ASGI path of its own (runs/events_asgi.py). B11.post's
second baseline; websockets as shipped.

``daphne bench.django_handler_asgi:application``.
"""

from channels.routing import ProtocolTypeRouter
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from contextadmin.asgi import application as shipped
from contextadmin.asgi import django_asgi_app

application = ProtocolTypeRouter(
    {
        "http": ASGIStaticFilesHandler(django_asgi_app),
        "websocket": shipped.application_mapping["websocket"],
    }
)

__all__ = ["application"]
