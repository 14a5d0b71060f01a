"""Fixtures for the runs tests: the demo workflow, tokens, and an authenticated API client."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.demo import demo_config, demo_events

__all__ = ["Api", "demo_config", "demo_events"]


@pytest.fixture
def generator(transactional_db):
    from contextadmin.models import Workflow
    from contextadmin.services import workflow_import

    workflow_import(name="Generator", data=demo_config())
    return Workflow.objects.get(name="Generator")


@pytest.fixture
def token_secret(generator) -> str:
    from runs.tokens import api_token_create

    return api_token_create(name="runtime")[1]


class Api:
    """A Django test client that speaks the runtime API with a bearer token."""

    def __init__(self, client, secret: str | None) -> None:
        self.client = client
        self.secret = secret

    def _headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.secret}"} if self.secret else {}

    def post(self, path: str, body: Any, **extra: Any):
        data = body if isinstance(body, bytes | str) else json.dumps(body)
        extra.setdefault("content_type", "application/json")
        return self.client.post(path, data=data, **self._headers(), **extra)

    def get(self, path: str, **extra: Any):
        return self.client.get(path, **self._headers(), **extra)

    def start(self, **body: Any) -> dict[str, Any]:
        response = self.post(
            "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme", **body}
        )
        assert response.status_code in (200, 201), response.content
        return response.json()

    def events(self, run_id: str, events: list[dict[str, Any]]):
        return self.post(f"/api/runs/{run_id}/events/", {"events": events})


@pytest.fixture
def api(client, token_secret) -> Api:
    return Api(client, token_secret)
