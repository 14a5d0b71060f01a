"""runs/db.py's plain-SQL reads give exactly the objects the ORM calls in their docstrings give:
same field values, same Python types (aware datetimes, real booleans), same deferred fields."""

from __future__ import annotations

import datetime

import pytest
from django.db import transaction
from django.utils import timezone

from runs import services
from runs.db import api_tokens_with_prefix, run_locked_get
from runs.models import ApiToken, Run

pytestmark = pytest.mark.django_db

DEFERRED = ("definitions", "provenance", "warnings", "state")


def _values(instance, names):
    return {name: getattr(instance, name) for name in names}


def test_a_locked_run_read_matches_the_orm(generator):
    started = services.run_start(workflow_name="Generator", enterprise_id="acme", run_id="r-1")
    Run.objects.filter(pk="r-1").update(ended_at=timezone.now(), last_seq=7, flip_count=3)
    with transaction.atomic():
        run = run_locked_get(run_id=started.run.pk, deferred=DEFERRED)
    expected = Run.objects.defer(*DEFERRED).get(pk="r-1")
    loaded = [f.attname for f in Run._meta.concrete_fields if f.name not in DEFERRED]
    assert _values(run, loaded) == _values(expected, loaded)
    assert run.get_deferred_fields() == set(DEFERRED)
    assert isinstance(run.started_at, datetime.datetime) and run.started_at.tzinfo is not None
    assert run.ended_at.tzinfo is not None
    assert run._state.adding is False and run._state.db == "default"
    assert run.state == Run.objects.get(pk="r-1").state  # a deferred field loads when read


def test_a_locked_read_of_an_unknown_run_is_none(generator):
    with transaction.atomic():
        assert run_locked_get(run_id="nope", deferred=DEFERRED) is None


def test_tokens_by_prefix_match_the_orm(generator):
    token, _ = services.api_token_create(name="scoped", workflow=generator)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now(), revoked=True)
    services.api_token_create(name="other")
    [found] = api_tokens_with_prefix(token.prefix)
    expected = ApiToken.objects.get(pk=token.pk)
    names = [f.attname for f in ApiToken._meta.concrete_fields]
    assert _values(found, names) == _values(expected, names)
    assert found.revoked is True  # a bool, not SQLite's 1
    assert found.last_used_at.tzinfo is not None
    assert found.workflow == generator
    assert api_tokens_with_prefix("00000000") == []
