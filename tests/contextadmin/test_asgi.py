"""contextadmin/asgi.py's set-up of the server it runs in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from daphne.http_protocol import WebRequest
from twisted.web import http
from twisted.web.test.requesthelper import DummyChannel

import contextadmin.asgi  # noqa: F401  (applies daphne_tune)


def _daphne_request() -> WebRequest:
    channel = DummyChannel()
    channel.factory = SimpleNamespace(server=SimpleNamespace(protocol_connected=lambda r: None))
    request = WebRequest(channel)
    request.process = lambda: None  # the application is not what is tested here
    return request


@pytest.mark.parametrize(
    "content_type, body",
    [
        (b"application/json", b'{"events": []}'),
        (b"application/x-www-form-urlencoded", b"a=1&b=2"),
        (b"multipart/form-data; boundary=x", b"--x\r\n\r\n--x--\r\n"),
    ],
)
def test_daphne_leaves_post_bodies_to_the_application(monkeypatch, content_type, body):
    def parse(line: bytes) -> bytes:
        raise AssertionError(f"Twisted parsed a POST's Content-Type: {line!r}")

    monkeypatch.setattr(http, "_parseContentType", parse)
    request = _daphne_request()
    request.requestHeaders.setRawHeaders(b"content-type", [content_type])
    request.gotLength(len(body))
    request.handleContentChunk(body)
    request.requestReceived(b"POST", b"/api/runs/r/events/", b"HTTP/1.1")
    assert request.args == {}
    assert request.content.read() == body  # the body Daphne hands on, untouched


def test_twisted_writes_no_second_access_log():
    """Daphne writes the access log; Twisted's own line per request is not even formatted."""
    from daphne.http_protocol import HTTPFactory

    written: list[str] = []
    factory = HTTPFactory(server=None)
    factory._logFile = SimpleNamespace(write=written.append)
    factory._logDateTime = "[23/Nov/2026:00:00:00 +0000]"
    request = _daphne_request()
    request.gotLength(0)
    request.requestReceived(b"GET", b"/", b"HTTP/1.1")
    factory.log(request)
    assert written == []
