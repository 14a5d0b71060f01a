"""Fixtures for the webhooks tests: loopback receivers are allowed (the tests' own servers),
timeouts and backoff scaled down, and the process's cached subscriptions forgotten between
tests (each test's rows are rolled back)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runs.webhooks.services.subscriptions import subscriptions_cache_clear
from tests.runs.webhooks.receiver import Receiver


@pytest.fixture(autouse=True)
def webhook_settings(settings) -> Iterator[None]:
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_CONNECT_TIMEOUT_S = 1.0
    settings.WEBHOOKS_READ_TIMEOUT_S = 0.5
    settings.WEBHOOKS_BACKOFF_BASE_S = 0.05
    settings.WEBHOOKS_SITE_URL = "https://contextadmin.example"
    subscriptions_cache_clear()
    yield
    subscriptions_cache_clear()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver().start()
    try:
        yield server
    finally:
        server.stop()
