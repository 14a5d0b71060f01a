"""The SDK's tests: each test's reporters log outages on their own (``Outages`` is per process,
and a reporter another test left waiting may meet a server on a reused port); and the shared
Daphne with the demo's Generator workflow, for tests that do not stop their server."""

import pytest
from contextadmin_sdk.client import background, outages

from tests.support.demo import DEMO
from tests.support.live_server import LiveServer


@pytest.fixture(autouse=True)
def outages_of_this_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "OUTAGES", outages.Outages())


@pytest.fixture(scope="session")
def generator_site(daphne_server: LiveServer) -> tuple[LiveServer, str]:
    """The shared Daphne (tests/support/live_server.py) with Generator and a token of its own."""
    daphne_server.manage("import_context", str(DEMO / "context_variables.json"), "--workflow",
                         "Generator")
    return daphne_server, daphne_server.manage("create_api_token", "sdk").stdout.strip()
