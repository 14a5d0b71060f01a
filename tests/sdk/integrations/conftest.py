"""AG2 tests run real AG2 (the ``ag2`` extra) with scripted agents; skipped without it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("autogen", reason='AG2 Classic: pip install "./sdk[autogen]"')

from autogen.io import IOStream


class SilentStream:
    """An AG2 IOStream that prints nothing (the chats' console output is noise in tests)."""

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        pass

    def send(self, message: Any) -> None:
        pass

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        return "exit"


@pytest.fixture(autouse=True)
def silent_ag2() -> Iterator[None]:
    with IOStream.set_default(SilentStream()):
        yield


@pytest.fixture(scope="session")
def site(daphne_server: Any) -> tuple[Any, str]:
    """The shared Daphne (tests/support/live_server.py) with the GeneratorChat workflow and a
    runtime token."""
    from runs.demo_chats.autogen_chat import DEMO_CONFIG, DEMO_WORKFLOW

    daphne_server.manage("import_context", str(DEMO_CONFIG), "--workflow", DEMO_WORKFLOW)
    token = daphne_server.manage("create_api_token", "ag2-live").stdout.strip()
    return daphne_server, token
