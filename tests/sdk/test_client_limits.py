"""What the reporter refuses itself, against a live Daphne: an event no request could carry
(refused alone, before it takes a seq, so the run goes on, over both transports and in
blocking mode), and a base URL that cannot lead to the API (named at construction, or told
apart from the API's own 404)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from contextadmin_sdk.client import DefinitionsError, ReportError, RunReporter
from contextadmin_sdk.client.transport import MAX_EVENT_BYTES, encode_record

from tests.sdk.test_client_transports import TRANSPORTS, reporter_for, stored_events, texts

pytestmark = pytest.mark.slow

TOO_LARGE = "x" * 1_200_000  # the tester's agent_text: over the server's 1 MB request limit


def largest_tool_response(seq: int) -> dict[str, Any]:
    """A tool_response whose record, with ``seq``, is exactly ``MAX_EVENT_BYTES`` long."""
    event = {"type": "tool_response", "agent": "a", "tool": "t", "status": "success",
             "data": {"content": ""}}
    padding = MAX_EVENT_BYTES - len(encode_record({**event, "seq": seq}))
    return {**event, "data": {"content": "y" * padding}}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_event_no_request_can_carry_is_refused_alone_and_the_run_goes_on(
    generator_site, transport, caplog
):
    site, token = generator_site
    reporter = reporter_for(site.url, token, transport)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    reporter.event("agent_text", agent="a", text="small")
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        assert reporter.event("agent_text", agent="a", text=TOO_LARGE) == 0  # no seq taken
        largest = largest_tool_response(2)
        assert reporter.event(**largest) == 2  # the largest event the server takes still goes
        assert reporter.event("agent_text", agent="a", text="after") == 3
        reporter.event("run_status", status="completed")
        assert reporter.close(timeout=20) is True
    assert reporter.transport_in_use == transport
    assert (reporter.error, reporter.oversized, reporter.dropped) == (None, 1, 0)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        f"run {run_id}: an event of 1,200,051 bytes as JSON (agent_text) is larger than the "
        "server takes (at most 1,048,563 bytes, its 1,048,576-byte request limit): not "
        "reported; send less (a summary, or a reference to the data)"
    ]
    events = stored_events(site, token, run_id)
    assert [event["seq"] for event in events] == [1, 2, 3, 4]
    assert texts(events) == ["small", "after"]
    assert events[1]["data"] == largest["data"]


def test_blocking_mode_raises_for_such_an_event_and_keeps_its_batches_under_the_limit(
    generator_site,
):
    site, token = generator_site
    reporter = RunReporter(site.url, token, batch_size=100, flush_interval=60)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    with pytest.raises(ReportError, match=r"at most 1,048,563 bytes") as refused:
        reporter.event("agent_text", agent="a", text=TOO_LARGE)
    assert refused.value.status == 413
    # 100 events of 30 KB, one batch by count: 3 MB, sent as several requests under the limit
    for i in range(100):
        reporter.event("agent_text", agent="a", text=f"{i} " + "z" * 30_000)
    reporter.close()
    events = stored_events(site, token, run_id)
    assert [event["seq"] for event in events] == list(range(1, 101))
    assert [text.split()[0] for text in texts(events)] == [str(i) for i in range(100)]


BASE_URLS = {  # what RunReporter(url, ...) says of each: its base_url, or the ValueError
    "127.0.0.1:8610": "base_url: expected the server's root URL, http://HOST[:PORT] or "
    "https://HOST[:PORT], got '127.0.0.1:8610'",  # no scheme
    "localhost:8000": "base_url: expected the server's root URL, http://HOST[:PORT] or "
    "https://HOST[:PORT], got 'localhost:8000'",  # the host read as a scheme
    "ftp://127.0.0.1:8610": "base_url: expected the server's root URL, http://HOST[:PORT] or "
    "https://HOST[:PORT], got 'ftp://127.0.0.1:8610'",
    "http://": "base_url: expected the server's root URL, http://HOST[:PORT] or "
    "https://HOST[:PORT], got 'http://'",
    "http://127.0.0.1:8610/api": "base_url: expected the server's root URL, http://HOST[:PORT] "
    "or https://HOST[:PORT], without /api (the reporter adds /api/... itself), got "
    "'http://127.0.0.1:8610/api': use 'http://127.0.0.1:8610'",
    "https://example.com/ca/api/": "base_url: expected the server's root URL, "
    "http://HOST[:PORT] or https://HOST[:PORT], without /api (the reporter adds /api/... "
    "itself), got 'https://example.com/ca/api/': use 'https://example.com/ca'",
    "http://127.0.0.1:8610/?x=1": "base_url: expected the server's root URL, http://HOST[:PORT] "
    "or https://HOST[:PORT], without a query or fragment, got 'http://127.0.0.1:8610/?x=1'",
    "http://127.0.0.1:8610/": "http://127.0.0.1:8610",
    " https://example.com/contextadmin/ ": "https://example.com/contextadmin",  # under a proxy
}


def base_url_of(url: str) -> str:
    try:
        return RunReporter(url, "ca_x").base_url
    except ValueError as exc:
        return str(exc)


def test_a_base_url_no_request_could_reach_the_api_with_is_refused_naming_it():
    assert {url: base_url_of(url) for url in BASE_URLS} == BASE_URLS


WRONG_BASE = "does not lead to contextadmin's API"


def start_blocking(url: str, token: str, workflow: str) -> str:
    try:
        RunReporter(url, token, retries=0).start(workflow=workflow, enterprise_id="acme")
    except ReportError as exc:
        return str(exc)
    raise AssertionError("started")


def start_background(url: str, token: str, workflow: str) -> str:
    reporter = RunReporter(url, token, background=True, transport="http")
    reporter.start(workflow=workflow, enterprise_id="acme")
    assert reporter.wait_started(10) is False
    reporter.close(timeout=0)
    return str(reporter.error)


def definitions_fetch(url: str, token: str, workflow: str) -> str:
    try:
        RunReporter(url, token).definitions(workflow)
    except DefinitionsError as exc:
        return str(exc)
    raise AssertionError("fetched")


NOT_FOUND = [  # (base URL's path, workflow, what each call's message says, what it must not)
    ("/contextadmin", "Generator", WRONG_BASE, "create or import"),  # Django's HTML 404
    ("", "Nope", "no workflow named 'Nope'", WRONG_BASE),  # the API's own 404 names the workflow
]


def test_a_404_that_is_not_the_apis_says_the_base_url_is_wrong(generator_site):
    site, token = generator_site
    wrong = []
    for call in (start_blocking, start_background, definitions_fetch):
        for path, workflow, says, not_says in NOT_FOUND:
            message = call(site.url + path, token, workflow)
            if "404" not in message or says not in message or not_says in message:
                wrong.append((call.__name__, path, message))
    assert not wrong, wrong
    assert f"fix: base_url {site.url}/contextadmin does not lead to" in start_blocking(
        site.url + "/contextadmin", token, "Generator"
    )
