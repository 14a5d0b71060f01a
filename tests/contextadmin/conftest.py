"""Fixtures for the definitions app: the seed example, a staff client, DB dumps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from contextadmin import services
from contextadmin.models import Handoff, OutputMapping, Trigger, Variable, Workflow

EXAMPLE_PATH = Path(settings.BASE_DIR) / "contextadmin" / "demo" / "context_variables.json"


@pytest.fixture
def example_bytes() -> bytes:
    return EXAMPLE_PATH.read_bytes()


@pytest.fixture
def example(example_bytes: bytes) -> dict[str, Any]:
    return json.loads(example_bytes)


@pytest.fixture
def generator(db: None, example_bytes: bytes) -> Workflow:
    services.workflow_import(name="Generator", data=example_bytes)
    return Workflow.objects.get(name="Generator")


@pytest.fixture
def staff(db: None) -> Any:
    return get_user_model().objects.create_superuser("operator", "op@example.com", "s3cret-pass")


@pytest.fixture
def staff_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def db_dump() -> dict[str, list[dict[str, Any]]]:
    """Return every definitions row, for before/after comparisons."""
    return {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in (Workflow, Variable, Trigger, Handoff, OutputMapping)
    }


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
