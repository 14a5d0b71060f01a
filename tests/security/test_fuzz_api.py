"""Fuzzing every API body and query: a JSON 4xx naming the problem, never a 500, nothing stored.

POST /api/runs/, POST /api/runs/<id>/events/, GET state ?at=, GET export ?environment=, and
the inspector's resolve endpoint (?at, ?template, ?syntax).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from runs.models import Run
from tests.security.conftest import db_state
from tests.security.strategies import (
    NASTY_STRINGS,
    VALID_EVENTS,
    any_text,
    body_bytes,
    hostile_event,
    hostile_json,
    keys,
    query_values,
)

pytestmark = pytest.mark.django_db

START_FIELDS = [
    "workflow", "enterprise_id", "run_id", "environment", "context", "runtime", "definitions",
]
VALID_START = {"workflow": "Generator", "enterprise_id": "acme"}


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def assert_json_error(response: Any) -> dict[str, Any]:
    """A 4xx with a JSON ``{"error": ...}`` body (no HTML, no traceback)."""
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json")
    body = orjson.loads(response.content)
    assert isinstance(body["error"], str) and body["error"]
    assert b"Traceback" not in response.content
    return body


@pytest.fixture
def no_server_errors(caplog):
    """Fail if anything logs an ERROR (Django logs every 500 as one)."""
    caplog.set_level(logging.ERROR)
    yield
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


# -- POST /api/runs/ ----------------------------------------------------------------------------
@st.composite
def start_bodies(draw: st.DrawFn) -> Any:
    body = dict(VALID_START)
    for field in draw(st.lists(st.sampled_from([*START_FIELDS, "extra"]), max_size=4)):
        if draw(st.booleans()):
            body[field if field != "extra" else draw(keys)] = draw(hostile_json)
        else:
            body.pop(field, None)
    if draw(st.booleans()):
        body["context"] = draw(st.dictionaries(keys, hostile_json, max_size=4))
    return body


@fuzz(250)
@given(body=body_bytes(start_bodies()))
@example(body=b'{"workflow": "Generator", "enterprise_id": "a\\u0000b"}')
@example(body=b'{"workflow": "Generator", "enterprise_id": "acme", "context": {"x": "\\u0000"}}')
@example(body=b'{"workflow": "Generator", "enterprise_id": "acme", "context": {"\\u0000": 1}}')
@example(body=b'{"workflow": "Gen\\u0000", "enterprise_id": "acme"}')
@example(body=b'{"workflow": "Generator", "enterprise_id": "acme", "runtime": {"framework": '
         b'"ag2", "version": "\\u0000"}}')
@example(body=b'{"workflow": "Generator", "enterprise_id": "acme", "definitions": {"version": '
         b'1e300, "digest": "sha256:"}}')
@example(body=b'{"workflow": "Generator", "enterprise_id": "acme", "definitions": {"version": '
         b'{"number": 1, "digest": 3}, "context_variables": []}}')
@example(body=b'{"workflow": "Generator", "enterprise_id": "acme", "run_id": "r\\u0000"}')
@example(body=b'{"workflow": "Generator", "enterprise_id": "acme", "context": {"n": 1e308}}')
@example(
    body=b'{"workflow": "Generator", "enterprise_id": "acme", "context": {"n": '
    + b"[" * 300
    + b"]" * 300
    + b"}}"
)
def test_run_start_bodies(api, no_server_errors, body):
    before = db_state()
    response = api.post("/api/runs/", body)
    if response.status_code in (200, 201):
        event("started")
        answer = orjson.loads(response.content)
        assert Run.objects.filter(pk=answer["run_id"]).exists()
        return
    event(f"refused {response.status_code}")
    assert_json_error(response)
    assert db_state() == before


# -- POST /api/runs/<id>/events/ ----------------------------------------------------------------
@st.composite
def event_bodies(draw: st.DrawFn) -> Any:
    events = draw(
        st.lists(hostile_event() | st.sampled_from(VALID_EVENTS), min_size=0, max_size=5)
    )
    body: dict[str, Any] = {"events": events}
    if draw(st.integers(0, 9)) == 0:
        body = draw(st.dictionaries(keys, hostile_json, max_size=3))
    return body


@fuzz(300)
@given(body=body_bytes(event_bodies()))
@example(body=b'{"events": [{"type": "agent_text", "agent": "a", "text": "x\\u0000"}]}')
@example(body=b'{"events": [{"type": "agent_text", "agent": {"name": "a", "x": '
         + b"[" * 300 + b"]" * 300 + b"}, \"text\": \"x\"}]}")
@example(body=b'{"events": [{"type": "tool_response", "tool": "t", "data": {"\\u0000": 1}}]}')
@example(body=b'{"events": [{"type": "context_set", "name": "concept_overview", '
               b'"value": "\\u0000"}]}')
@example(body=b'{"events": [{"type": "agent_text", "agent": "a", "text": "x", "seq": 1e300}]}')
@example(body=b'{"events": [{"type": "agent_text", "agent": "a", "text": "x", '
         b'"seq": 18446744073709551615}]}')
def test_event_batches(api, no_server_errors, body):
    run_id = Run.objects.values_list("pk", flat=True).first() or api.start()["run_id"]
    before = db_state()
    response = api.post(f"/api/runs/{run_id}/events/", body)
    if response.status_code == 200:
        event("stored")
        state = api.get(f"/api/runs/{run_id}/state/")
        assert state.status_code == 200
        return
    event(f"refused {response.status_code}")
    assert_json_error(response)
    assert db_state() == before


# -- queries -------------------------------------------------------------------------------------
def raw_query(**params: str) -> str:
    """A query string with each value percent-encoded as UTF-8 bytes (surrogates kept as is)."""
    return "&".join(
        f"{name}={quote(value.encode('utf-8', 'surrogatepass'), safe='')}"
        for name, value in params.items()
    )


@fuzz(100)
@given(at=query_values, raw=st.sampled_from(["", "%ff", "%ed%a0%80", "%00", "%"]))
def test_state_at(api, staff_client, no_server_errors, at, raw):
    run_id = api.start()["run_id"] if not Run.objects.exists() else Run.objects.get().pk
    api.events(run_id, [{"type": "agent_text", "agent": "InterviewAgent", "text": "hi"}])
    query = raw_query(at=at) + raw
    for response in (
        api.get(f"/api/runs/{run_id}/state/", QUERY_STRING=query),
        staff_client.get(f"/api/runs/{run_id}/state/", QUERY_STRING=query),
    ):
        if response.status_code != 200:
            assert_json_error(response)


@fuzz(80)
@given(environment=query_values, name=st.sampled_from(["Generator", "Nope", *NASTY_STRINGS[:6]]))
def test_export_environment_and_name(generator, staff_client, no_server_errors, environment, name):
    quoted = quote(name.encode("utf-8", "surrogatepass"), safe="")
    path = f"/api/workflows/{quoted}/context_variables.json"
    response = staff_client.get(path, QUERY_STRING=raw_query(environment=environment))
    if response.status_code == 200:
        assert environment in ("development", "production", "") and name == "Generator"
        return
    assert 400 <= response.status_code < 500
    if response["Content-Type"].startswith("application/json"):
        assert orjson.loads(response.content)["error"]


@fuzz(120)
@given(
    params=st.dictionaries(
        st.sampled_from(["at", "template", "syntax"]), query_values | any_text, max_size=3
    )
)
@example(params={"template": "{{" * 3000})
@example(params={"template": "{" * 4000, "syntax": "system"})
@example(params={"template": "{{a.b.c.d.e.f.g.h}}" * 200})
@example(params={"template": "{0.__class__}", "syntax": "system"})
@example(params={"template": "{enterprise_id.__class__.__mro__}", "syntax": "system"})
@example(params={"template": "{enterprise_id:>99999999}", "syntax": "system"})
def test_resolve_params(api, staff_client, no_server_errors, params):
    run_id = api.start()["run_id"] if not Run.objects.exists() else Run.objects.get().pk
    response = staff_client.get(f"/api/runs/{run_id}/resolve/", QUERY_STRING=raw_query(**params))
    if response.status_code == 200:
        answer = orjson.loads(response.content)
        assert isinstance(answer["text"], str)
        assert "<class" not in answer["text"], "templates must not reach Python attributes"
        assert len(answer["text"]) < 100_000
        return
    assert_json_error(response)


def test_query_strings_that_are_not_utf8_or_absurdly_long(api, staff_client, no_server_errors):
    run_id = api.start()["run_id"]
    queries = ("at=%ff%fe", "at=" + "9" * 10_000, "template=" + "x" * 100_000, "at=%00")
    for query in queries:
        for path in (f"/api/runs/{run_id}/state/", f"/api/runs/{run_id}/resolve/"):
            response = staff_client.get(path, QUERY_STRING=query)
            assert response.status_code < 500


def test_nul_anywhere_in_a_request_is_a_400_naming_where(api, staff_client, no_server_errors):
    """PostgreSQL cannot store or even compare NUL: it is refused before any view or query."""
    run_id = api.start()["run_id"]
    before = db_state()
    cases = [
        (staff_client.get, "/api/runs/a%00b/state/", {}, "path"),
        (api.get, "/api/workflows/a%00b/context_variables.json", {}, "path"),
        (staff_client.get, "/admin/contextadmin/workflow/", {"QUERY_STRING": "q=%00"}, "query"),
        (staff_client.get, "/runs/", {"QUERY_STRING": "workflow=a%00"}, "query"),
        (staff_client.get, f"/api/runs/{run_id}/resolve/", {"QUERY_STRING": "template=%00"},
         "query"),
    ]
    for get, path, extra, where in cases:
        response = get(path, HTTP_ACCEPT="application/json", **extra)
        assert response.status_code == 400, path
        assert response.json()["error"].startswith(f"{where}: contains a NUL character"), path
        if not path.startswith("/api/"):  # a browser gets a page saying the same
            page = get(path, HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8", **extra)
            assert page.status_code == 400 and page["Content-Type"].startswith("text/html")
            assert f"{where}: contains a NUL character" in page.content.decode(), path
    form = staff_client.post("/admin/runs/apitoken/add/", {"name": "a\x00b"})
    assert form.status_code == 400 and "form: contains a NUL character" in form.content.decode()
    for body in (
        b'{"events": [{"type": "agent_text", "agent": "a", "text": "\\u0000"}]}',
        b'{"events": [{"type": "tool_response", "tool": "t", "data": {"\\u0000": 1}}]}',
    ):
        response = api.post(f"/api/runs/{run_id}/events/", body)
        assert response.status_code == 400
        assert response.json()["error"].startswith("body: contains a NUL character")
    assert db_state() == before
