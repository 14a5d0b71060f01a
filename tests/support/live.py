"""``ChannelsLiveServerTestCase`` made safe to fork from a long test session."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import SyncToAsync
from channels.layers import channel_layers
from channels.testing import ChannelsLiveServerTestCase
from channels.testing.live import set_database_connection
from daphne.testing import DaphneProcess
from django.db import connections


def _child_setup() -> None:
    # The child is forked from a pytest process that has run async tests. Fork copies thread
    # pools without their threads, so asgiref's shared executor would accept work and never run
    # it; and the parent's channel layer holds queues of the parent's event loops. Start both
    # afresh, then point the child at the test database.
    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)
    channel_layers.backends.clear()
    set_database_connection()


class _DaphneProcess(DaphneProcess):
    def __init__(self, host, get_application, kwargs=None, setup=None, teardown=None, port=None):
        super().__init__(
            host, get_application, kwargs=kwargs, setup=_child_setup, teardown=teardown, port=port
        )


class LiveServerTestCase(ChannelsLiveServerTestCase):
    """Real Daphne in a child process, sharing the file test database."""

    host = "127.0.0.1"
    serve_static = False
    ProtocolServerProcess = _DaphneProcess

    @classmethod
    def setUpClass(cls) -> None:
        # A forked child must not inherit open SQLite handles: POSIX locks are per process, so
        # closing an inherited one breaks the child's view of the WAL.
        connections.close_all()
        super().setUpClass()
