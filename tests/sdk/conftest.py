"""The SDK's tests: each test's reporters log outages on their own (``Outages`` is per process,
and a reporter another test left waiting may meet a server on a reused port)."""

import pytest
from contextadmin_sdk.client import background, outages


@pytest.fixture(autouse=True)
def outages_of_this_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "OUTAGES", outages.Outages())
