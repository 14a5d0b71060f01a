"""Access: staff-only pages, APIs and sockets; API tokens (hashed, revocable, scoped, compared in
constant time); cross-origin sockets; CSRF on every form; deploy checks; escaping; no secrets
in logs.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import logging
import re
import secrets
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from contextadmin.models import Workflow
from contextadmin.services import workflow_import
from devservers.processes import manage, server_env
from runs import tokens
from runs.models import ApiToken, Run
from runs.services import ingest, lifecycle
from tests.runs.conftest import Api, demo_config
from tests.security.conftest import db_state

MARK = "zq-marker"  # appears in the definitions and the run: must never reach an outsider


@pytest.fixture
def site(db, django_user_model) -> dict[str, Any]:
    document = copy.deepcopy(demo_config())
    document["context_variables"]["declarative_variables"][0]["description"] = f"{MARK}-desc"
    workflow_import(name="Generator", data=document)
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id=f"{MARK}-ent").run
    ingest.event_ingest(
        run_id=run.pk, events=[{"type": "agent_text", "agent": "InterviewAgent", "text": MARK}]
    )
    django_user_model.objects.create_user("viewer", password="pw-12345678")  # not staff
    return {"run_id": run.pk, "workflow": Workflow.objects.get(name="Generator")}


def as_user(django_user_model, username: str) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.get(username=username))
    return client


def staff_only_urls(site: dict[str, Any]) -> list[str]:
    run_id, workflow = site["run_id"], site["workflow"]
    return [
        "/runs/",
        "/runs/?format=json",
        f"/runs/{run_id}/",
        "/workflows/Generator/preview/",
        "/workflows/Generator/preview/fetch/?variable=concept_overview",
        f"/api/runs/{run_id}/resolve/?template={{{{product_tier}}}}",
        f"/api/runs/{run_id}/state/",
        "/api/workflows/Generator/context_variables.json",
        "/admin/",
        "/admin/contextadmin/workflow/",
        f"/admin/contextadmin/workflow/{workflow.pk}/change/",
        "/admin/contextadmin/workflow/import/",
        "/admin/contextadmin/variable/",
        "/admin/runs/run/",
        f"/admin/runs/run/{run_id}/change/",
        "/admin/runs/apitoken/",
    ]


# -- pages and APIs --------------------------------------------------------------------------------
@pytest.mark.parametrize("who", ["anonymous", "non-staff"])
def test_outsiders_get_nothing_from_pages_and_apis(site, django_user_model, who):
    client = Client() if who == "anonymous" else as_user(django_user_model, "viewer")
    for url in staff_only_urls(site):
        response = client.get(url)
        assert response.status_code in (302, 401, 403), (url, response.status_code)
        if response.status_code == 302:
            assert response["Location"].startswith("/admin/login/"), url
        assert MARK.encode() not in response.content, url
        assert b"product_tier" not in response.content, url


def test_staff_sessions_see_them(site, django_user_model):
    django_user_model.objects.create_user("op", password="pw-12345678", is_staff=True,
                                          is_superuser=True)
    client = as_user(django_user_model, "op")
    for url in staff_only_urls(site):
        assert client.get(url).status_code == 200, url


def test_sessions_never_write_through_the_api(site, django_user_model):
    """The API's POSTs take tokens only, which is why they need no CSRF token."""
    django_user_model.objects.create_user("op", password="pw-12345678", is_staff=True)
    client = as_user(django_user_model, "op")
    before = db_state()
    for path, body in (
        ("/api/runs/", {"workflow": "Generator", "enterprise_id": "acme"}),
        (f"/api/runs/{site['run_id']}/events/", {"events": [{"type": "run_status",
                                                             "status": "failed"}]}),
    ):
        response = client.post(path, body, content_type="application/json")
        assert response.status_code == 401
        assert response.json()["error"].startswith("Authorization")
    assert db_state() == before


# -- tokens ----------------------------------------------------------------------------------------
def test_tokens_are_stored_only_as_a_hash(site):
    token, secret = tokens.api_token_create(name="runtime")
    random_part = secret.split("_", 2)[2]
    dump = repr(db_state())
    assert secret not in dump and random_part not in dump
    stored = ApiToken.objects.get(pk=token.pk).secret_hash
    assert stored == hashlib.sha256(secret.encode()).hexdigest()


def test_token_comparison_is_constant_time_and_not_by_sql(site, monkeypatch):
    _, secret = tokens.api_token_create(name="runtime")
    presented_hash = hashlib.sha256(secret.encode()).hexdigest()
    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    with CaptureQueriesContext(connection) as queries:
        assert tokens.api_token_authenticate(secret=secret) is not None
        wrong = secret[:-4] + ("AAAA" if not secret.endswith("AAAA") else "BBBB")
        assert tokens.api_token_authenticate(secret=wrong) is None
    assert (compared[0][1]) == presented_hash and len(compared) == 2
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert presented_hash not in sql and secret not in sql


def test_revoked_tokens_stop_working_everywhere(site, client, django_user_model):
    django_user_model.objects.create_user("op", password="pw-12345678", is_staff=True,
                                          is_superuser=True)
    token, secret = tokens.api_token_create(name="runtime")
    api = Api(client, secret)
    state = f"/api/runs/{site['run_id']}/state/"
    export = "/api/workflows/Generator/context_variables.json"
    assert (api.get(state).status_code, api.get(export).status_code) == (200, 200)
    # revoked from the admin's action
    admin = as_user(django_user_model, "op")
    response = admin.post("/admin/runs/apitoken/", {"action": "revoke",
                                                    "_selected_action": [token.pk]})
    assert response.status_code == 302
    for response in (api.get(state), api.get(export),
                     api.post("/api/runs/", {"workflow": "Generator", "enterprise_id": "a"})):
        assert response.status_code == 401
        assert response.json()["error"] == "Authorization: invalid or revoked token"


def test_export_with_a_token_scoped_or_not(site, client):
    other = Workflow.objects.create(name="Other")
    _, scoped_other = tokens.api_token_create(name="scoped-other", workflow=other)
    _, scoped_here = tokens.api_token_create(name="scoped-here", workflow=site["workflow"])
    _, unscoped = tokens.api_token_create(name="any")
    path = "/api/workflows/{}/context_variables.json"
    cases = [
        (scoped_here, "Generator", 200),
        (unscoped, "Generator", 200),
        (unscoped, "Other", 200),
        (scoped_other, "Generator", 403),
        (scoped_other, "Nope", 403),  # a scoped token learns nothing about other names
        (unscoped, "Nope", 404),
        ("ca_00000000_" + "x" * 43, "Generator", 401),
        ("not-a-token", "Generator", 401),
    ]
    for secret, name, status in cases:
        response = Api(client, secret).get(path.format(name))
        assert response.status_code == status, (name, status, response.content[:200])
        if status != 200:
            assert MARK.encode() not in response.content
    scoped = Api(client, scoped_here).get(path.format("Generator"))
    assert f"{MARK}-desc".encode() in scoped.content
    basic = client.get(path.format("Generator"), HTTP_AUTHORIZATION="Basic b3A6cHc=")
    assert basic.status_code == 401
    # where only a token counts, another scheme is told which one: even with a good secret
    for header in (f"Basic {unscoped}", unscoped, f"Token {unscoped}"):
        start = client.post(
            "/api/runs/", {"workflow": "Generator", "enterprise_id": "a"},
            content_type="application/json", HTTP_AUTHORIZATION=header,
        )
        assert start.status_code == 401
        assert start.json()["error"] == "Authorization: expected `Bearer <token>`"


def test_a_created_token_secret_is_shown_once(site, django_user_model, caplog):
    caplog.set_level(logging.DEBUG)
    django_user_model.objects.create_user("op", password="pw-12345678", is_staff=True,
                                          is_superuser=True)
    admin = as_user(django_user_model, "op")
    response = admin.post("/admin/runs/apitoken/add/", {"name": "ci", "workflow": ""})
    # the answer to the POST itself shows it (no redirect to a page that reads it back)
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    body = response.content.decode()
    shown = re.search(r"ca_[0-9a-f]{8}_[A-Za-z0-9_-]{20,100}", body)
    assert shown, "the secret is shown once, right after creation"
    secret = shown.group(0)
    assert body.count(secret) == 1
    # never in a cookie: no Set-Cookie carries it (no messages cookie at all), nor the session
    assert "messages" not in response.cookies
    for morsel in response.cookies.values():
        assert secret not in morsel.OutputString()
    assert all(secret not in str(value) for value in admin.session.values())
    token = ApiToken.objects.get(name="ci")
    for url in ("/admin/runs/apitoken/", f"/admin/runs/apitoken/{token.pk}/change/", "/admin/"):
        later = admin.get(url)
        assert secret not in later.content.decode()
        assert all(secret not in morsel.value for morsel in admin.cookies.values()), url
        assert all(secret not in morsel.OutputString() for morsel in later.cookies.values())
    assert secret not in caplog.text
    assert tokens.api_token_authenticate(secret=secret) == token


# -- sockets ---------------------------------------------------------------------------------------
def _socket_site():
    from django.contrib.auth import get_user_model

    workflow_import(name="Generator", data=demo_config())
    other = Workflow.objects.create(name="Other")
    user = get_user_model().objects.create_user("op", password="pw-12345678", is_staff=True)
    client = Client()
    client.force_login(user)
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    return {
        "session": client.cookies["sessionid"].value,
        "run_id": run.pk,
        "secret": tokens.api_token_create(name="rt")[1],
        "scoped_other": tokens.api_token_create(name="so", workflow=other)[1],
    }


def _communicator(path: str, headers: list[tuple[bytes, bytes]]) -> WebsocketCommunicator:
    from contextadmin.asgi import application

    return WebsocketCommunicator(application, path, headers=headers)


@pytest.mark.django_db(transaction=True)
async def test_cross_origin_and_sessionless_sockets_are_refused():
    s = await sync_to_async(_socket_site)()
    cookie = (b"cookie", f"sessionid={s['session']}".encode())
    refused = [
        *(
            (path, [(b"origin", origin), cookie])
            for path in ("/ws/runs/", f"/ws/runs/{s['run_id']}/")
            for origin in (b"http://evil.example", b"null", b"http://testserver.evil.example",
                           b"http://evil.example/http://testserver")
        ),
        (f"/ws/ingest/{s['run_id']}/?token={s['secret']}",
         [(b"origin", b"http://testserver.evil.example")]),
        # a staff session is not an ingest credential
        (f"/ws/ingest/{s['run_id']}/", [(b"origin", b"http://testserver"), cookie]),
    ]
    for path, headers in refused:
        comm = _communicator(path, headers)
        assert not (await comm.connect())[0], (path, headers)
    comm = _communicator(f"/ws/runs/{s['run_id']}/", [(b"origin", b"http://testserver"), cookie])
    assert (await comm.connect())[0], "the same origin with a staff session is let in"
    await comm.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_ingest_socket_scoped_and_revoked_tokens(monkeypatch):
    from runs import consumers

    s = await sync_to_async(_socket_site)()
    comm = _communicator(f"/ws/ingest/{s['run_id']}/?token={s['scoped_other']}", [])
    await comm.connect()
    refusal = await comm.receive_json_from()
    assert refusal["status"] == 404 and "no run" in refusal["error"]  # as an unknown run
    assert (await comm.receive_output())["code"] == consumers.CLOSE_NOT_FOUND

    monkeypatch.setattr(consumers, "TOKEN_RECHECK_S", 0.0)
    monkeypatch.setattr(consumers, "SHARED_READ_S", 0.0)
    # Revoked below in the database, as another process would: no cached read hides it.
    monkeypatch.setattr(tokens, "TOKEN_CACHE_S", 0.0)
    comm = _communicator(f"/ws/ingest/{s['run_id']}/?token={s['secret']}", [])
    assert (await comm.connect())[0]
    await comm.send_json_to({"type": "agent_text", "agent": "a", "text": "x"})
    assert (await comm.receive_json_from(timeout=5))["type"] == "ack"
    await sync_to_async(ApiToken.objects.filter(name="rt").update)(revoked=True)
    await comm.send_json_to({"type": "agent_text", "agent": "a", "text": "y"})
    error = await comm.receive_json_from(timeout=5)
    assert error == {"type": "error", "status": 401, "error": "Authorization: token revoked"}
    assert (await comm.receive_output())["code"] == consumers.CLOSE_UNAUTHORIZED
    count = sync_to_async(lambda: Run.objects.get(pk=s["run_id"]).events.count())
    assert await count() == 1
    comm = _communicator(f"/ws/ingest/{s['run_id']}/?token={s['secret']}", [])
    assert not (await comm.connect())[0]


# -- CSRF ------------------------------------------------------------------------------------------
def test_every_admin_form_and_the_import_page_need_the_csrf_token(site, django_user_model,
                                                                   example_file):
    django_user_model.objects.create_user("op", password="pw-12345678", is_staff=True,
                                          is_superuser=True)
    client = Client(enforce_csrf_checks=True)
    client.force_login(django_user_model.objects.get(username="op"))
    workflow = site["workflow"]
    token = tokens.api_token_create(name="runtime")[0]
    forms: list[tuple[str, dict[str, Any]]] = [
        ("/admin/contextadmin/workflow/add/", {"name": "New"}),
        (f"/admin/contextadmin/workflow/{workflow.pk}/change/", {"name": "Generator"}),
        (f"/admin/contextadmin/workflow/{workflow.pk}/delete/", {"post": "yes"}),
        ("/admin/contextadmin/workflow/import/", {"step": "upload", "name": "Fresh"}),
        ("/admin/contextadmin/workflow/import/", {"step": "apply", "token": "x"}),
        (f"/admin/contextadmin/workflow/{workflow.pk}/import/", {"step": "upload"}),
        ("/admin/runs/apitoken/add/", {"name": "ci"}),
        ("/admin/runs/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}),
        (f"/admin/runs/run/{site['run_id']}/delete/", {"post": "yes"}),
        ("/admin/password_change/", {"old_password": "pw-12345678"}),
        ("/admin/logout/", {}),
    ]
    before = db_state()
    for url, data in forms:
        if "import/" in url and data.get("step") == "upload":
            data = {**data, "file": example_file()}
        response = client.post(url, data)
        assert response.status_code == 403, url
        assert b"CSRF" in response.content, url
    assert db_state() == before
    # with the token the same forms get past the CSRF check
    client.get("/admin/")
    csrf = client.cookies["csrftoken"].value
    for url, data in forms[:-1]:
        if "import/" in url and data.get("step") == "upload":
            data = {**data, "file": example_file()}
        response = client.post(url, {**data, "csrfmiddlewaretoken": csrf})
        assert response.status_code < 500 and b"CSRF" not in response.content, url


@pytest.fixture
def example_file():
    import json

    def make() -> SimpleUploadedFile:
        return SimpleUploadedFile(
            "context_variables.json", json.dumps(demo_config()).encode(), "application/json"
        )

    return make


def test_the_login_form_needs_the_csrf_token(db):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/admin/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403


# -- deployment checks -----------------------------------------------------------------------------
def production_env(tmp_path, **extra: str) -> dict[str, str]:
    return server_env(
        f"sqlite:///{tmp_path / 'deploy.sqlite3'}",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="contextadmin.example.com",
        DJANGO_SECURE_SSL="1",
        **extra,
    )


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "DEBUG",
                    check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


def test_production_refuses_to_start_without_a_secret_key_and_flags_a_weak_one(tmp_path):
    env = production_env(tmp_path)
    del env["DJANGO_SECRET_KEY"]
    missing = manage(env, "check", check=False)
    assert missing.returncode != 0 and "DJANGO_SECRET_KEY" in missing.stderr
    weak = manage({**env, "DJANGO_SECRET_KEY": "changeme"}, "check", "--deploy", check=False)
    assert "security.W009" in weak.stdout + weak.stderr


# -- escaping --------------------------------------------------------------------------------------
XSS = "<script>alert('xss')</script>"
XSS_ATTR = '"><img src=x onerror=alert(1)>'


@pytest.fixture
def hostile_site(db, django_user_model, settings) -> dict[str, Any]:
    settings.MONGODB_URI = ""
    document = copy.deepcopy(demo_config())
    section = document["context_variables"]
    section["declarative_variables"][0]["description"] = XSS
    section["declarative_variables"][0]["value"] = XSS_ATTR
    section["database_variables"][0]["source"]["collection"] = XSS
    section["derived_variables"][0]["triggers"][0]["match"]["equals"] = XSS
    section["derived_variables"][0]["triggers"].append(
        {"type": "agent_turn_count", "agent": XSS_ATTR, "count": 1}
    )
    document["handoffs"] = [
        {"source_agent": XSS, "target_agent": XSS_ATTR, "condition": "${interview_complete}",
         "description": XSS}
    ]
    workflow_import(name="Generator", data=document)
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id=XSS).run
    ingest.event_ingest(run_id=run.pk, events=[
        {"type": "agent_text", "agent": XSS_ATTR, "text": XSS},
        {"type": "tool_response", "tool": XSS, "status": "ok", "data": {XSS: XSS_ATTR}},
        {"type": "context_set", "name": "concept_overview", "value": XSS},
    ])
    tokens.api_token_create(name=XSS)
    django_user_model.objects.create_user("op", password="pw-12345678", is_staff=True,
                                          is_superuser=True)
    return {"run_id": run.pk, "workflow": Workflow.objects.get(name="Generator"),
            "document": document}


def assert_escaped(html: str, where: str) -> None:
    assert "<script>alert(" not in html, where
    assert "<img src=x" not in html, where


def test_hostile_values_render_as_text_everywhere(hostile_site, django_user_model):
    admin = as_user(django_user_model, "op")
    workflow, run_id = hostile_site["workflow"], hostile_site["run_id"]
    token = ApiToken.objects.get()
    pages = [
        "/admin/contextadmin/workflow/",
        f"/admin/contextadmin/workflow/{workflow.pk}/change/",
        "/admin/contextadmin/variable/",
        "/admin/contextadmin/trigger/",
        "/admin/contextadmin/handoff/",
        "/admin/runs/run/",
        f"/admin/runs/run/{run_id}/change/",
        "/admin/runs/apitoken/",
        f"/admin/runs/apitoken/{token.pk}/change/",
        "/runs/",
        f"/runs/{run_id}/",
        "/workflows/Generator/preview/",
    ]
    escaped_somewhere = 0
    for url in pages:
        response = admin.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert_escaped(html, url)
        escaped_somewhere += "&lt;script&gt;alert(" in html or "\\u003Cscript\\u003E" in html
    assert escaped_somewhere >= len(pages) - 2
    # the import page's report and diff
    import json

    upload = SimpleUploadedFile("c.json", json.dumps(hostile_site["document"]).encode())
    response = admin.post("/admin/contextadmin/workflow/import/",
                          {"step": "upload", "name": "Copy", "file": upload})
    assert response.context["token"]
    assert_escaped(response.content.decode(), "import preview")
    broken = copy.deepcopy(hostile_site["document"])
    broken["context_variables"]["declarative_variables"][0][XSS] = 1
    upload = SimpleUploadedFile("c.json", json.dumps(broken).encode())
    response = admin.post("/admin/contextadmin/workflow/import/",
                          {"step": "upload", "name": "Copy", "file": upload})
    assert response.context["issues"]
    assert_escaped(response.content.decode(), "import report")


def test_the_inspector_builds_the_dom_with_text_only():
    """The inspector's JS renders data with textContent; innerHTML never takes data."""
    from pathlib import Path

    from django.conf import settings

    for path in sorted((Path(settings.BASE_DIR) / "static" / "inspector").glob("*.js")):
        code = path.read_text()
        assert not re.search(r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write",
                             code), path.name


# -- secrets in logs -------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)  # events commit in the group commit's own thread
def test_no_secret_reaches_the_logs(site, client, caplog, settings, monkeypatch):
    settings.DEBUG = True  # Django logs every SQL query with its parameters
    settings.CONTEXT_VERBOSE_DEBUG = True
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-zq81")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-zq82")
    monkeypatch.setenv("CONTEXT_AWARE", "true")
    caplog.set_level(logging.DEBUG)
    for name in ("runs", "contextadmin", "django", "django.db.backends", "django.request"):
        caplog.set_level(logging.DEBUG, logger=name)
    token, secret = tokens.api_token_create(name="runtime")
    api = Api(client, secret)
    run_id = api.start()["run_id"]
    assert api.events(run_id, [{"type": "agent_text", "agent": "InterviewAgent",
                                "text": "NEXT"}]).status_code == 200
    api.get(f"/api/runs/{run_id}/state/")
    api.get("/api/workflows/Generator/context_variables.json")
    wrong = secret[:-6] + "ZZZZZZ"
    assert Api(client, wrong).get(f"/api/runs/{run_id}/state/").status_code == 401
    tokens.api_token_revoke(token=token)
    assert api.get(f"/api/runs/{run_id}/state/").status_code == 401
    logged = caplog.text + "".join(repr(r.args) for r in caplog.records)
    assert "SELECT" in logged, "the query log was on"
    for value in (secret, secret.split("_", 2)[2], wrong, "sk-secret-zq81", "aws-secret-zq82"):
        assert value not in logged


def _inspector_sessions():
    """Sessions of every kind a browser could present to an inspector socket."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects

    def session_of(user) -> str:
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    staff = users.create_user("staff", password="pw-12345678", is_staff=True)
    inactive = users.create_user("gone", password="pw-12345678", is_staff=True)
    changed = users.create_user("moved", password="pw-12345678", is_staff=True)
    sessions = {
        "staff": session_of(staff),
        "not staff": session_of(users.create_user("op", password="pw-12345678")),
        "inactive staff": session_of(inactive),
        "staff whose password changed": session_of(changed),
        "made-up session key": "x" * 32,
    }
    inactive.is_active = False
    inactive.save()
    changed.set_password("another-pw-87654321")
    changed.save()
    logged_out = Client()
    logged_out.force_login(staff)
    sessions["logged out"] = logged_out.cookies["sessionid"].value
    logged_out.logout()
    workflow_import(name="Generator", data=demo_config())
    run = lifecycle.run_start(workflow_name="Generator", enterprise_id="acme").run
    return sessions, run.pk


@pytest.mark.django_db(transaction=True)
async def test_inspector_sockets_let_in_only_a_live_staff_session():
    sessions, run_id = await sync_to_async(_inspector_sessions)()
    origin = (b"origin", b"http://testserver")
    for path in ("/ws/runs/", f"/ws/runs/{run_id}/"):
        for who, key in sessions.items():
            comm = _communicator(path, [origin, (b"cookie", f"sessionid={key}".encode())])
            connected, _ = await comm.connect()
            assert connected == (who == "staff"), (path, who)
            await comm.disconnect()
        comm = _communicator(path, [origin])  # no cookie at all
        assert not (await comm.connect())[0], path
