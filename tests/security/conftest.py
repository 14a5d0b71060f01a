"""Fixtures for the hostile-input and access tests: the demo workflow, tokens, DB snapshots."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps

from tests.runs.conftest import Api, demo_config

IGNORED_COLUMNS = {"last_used_at"}  # touched by every authenticated request, harmlessly


def db_state() -> dict[str, list[dict[str, Any]]]:
    """Every row of the definitions and runs apps, for before/after comparisons."""
    state = {}
    for label in ("contextadmin", "runs"):
        for model in apps.get_app_config(label).get_models():
            rows = model.objects.order_by("pk").values()
            state[model.__name__] = [
                {k: v for k, v in row.items() if k not in IGNORED_COLUMNS} for row in rows
            ]
    return state


@pytest.fixture(autouse=True)
def _fresh_limits():
    """Each test starts with empty rate buckets and socket counts."""
    from runs import ratelimit

    ratelimit.reset()
    yield
    ratelimit.reset()


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


@pytest.fixture
def api(client, token_secret) -> Api:
    return Api(client, token_secret)


@pytest.fixture
def staff_user(db, django_user_model):
    return django_user_model.objects.create_user("operator", password="pw-12345678", is_staff=True,
                                                 is_superuser=True)


@pytest.fixture
def staff_client(staff_user):
    from django.test import Client

    client = Client()
    client.force_login(staff_user)
    return client


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
