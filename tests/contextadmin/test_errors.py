"""One JSON error renderer for every view: the body names the field, and every header the
error calls for is kept (a 429's or 503's Retry-After, a 401's WWW-Authenticate, a 405's Allow)."""

from __future__ import annotations

import json

import pytest

from contextadmin.errors import (
    BadRequest,
    Conflict,
    MethodNotAllowed,
    Overloaded,
    RateLimited,
    Unauthorized,
    error_response,
)


@pytest.mark.parametrize(
    ("error", "status", "headers"),
    [
        (BadRequest("events[0].type: unknown", index=0), 400, {}),
        (Conflict("events[0].seq: gap", expected_seq=3), 409, {}),
        (RateLimited("token: over its rate limit", retry_after=7), 429, {"Retry-After": "7"}),
        (Overloaded("server busy", retry_after=4), 503, {"Retry-After": "4"}),
        (Unauthorized("Authorization: invalid"), 401,
         {"WWW-Authenticate": 'Bearer realm="contextadmin"'}),
        (MethodNotAllowed("PUT", ("GET", "HEAD")), 405, {"Allow": "GET, HEAD"}),
    ],
)
def test_an_error_renders_as_json_with_its_headers(error, status, headers):
    response = error_response(error)
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert body == {"error": error.message, **error.extra}
    for name, value in headers.items():
        assert response[name] == value


@pytest.mark.django_db
def test_a_staff_json_view_keeps_retry_after(admin_client, monkeypatch):
    """The inspector's staff JSON endpoints render errors with the same renderer."""
    from runs import views

    def limited(request, name):
        raise RateLimited("slow down", retry_after=3)

    wrapped = views.staff_json(limited)
    request = admin_client.get("/").wsgi_request
    response = wrapped(request, name="x")
    assert response.status_code == 429 and response["Retry-After"] == "3"
