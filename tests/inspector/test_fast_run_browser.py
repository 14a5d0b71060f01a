"""Issue 17, item 11 in a real browser (Debian Chromium, Playwright, real Daphne): a run much
longer than the event list keeps. The list holds at most its cap of rows and still shows the
newest event; it says that earlier events left it and where they still are (time travel, the
JSONL download); a pause during a flood keeps only the cap's worth of rows waiting."""

from __future__ import annotations

import json

import pytest
from contextadmin_sdk.client import RunReporter
from playwright.sync_api import expect

from tests.inspector.test_browser import chatter, context_value, open_run, stream_seqs, travel
from tests.support.demo import demo_events

pytestmark = pytest.mark.browser

CAP = 500  # static/inspector/stream.js MAX_ROWS: what the list says it keeps
FLOOD = 1300  # events after the demo's eight: far more than the list keeps


def fast_reporter(live) -> RunReporter:
    """A run whose events go in batches of 100 (the flood takes seconds, not minutes)."""
    reporter = RunReporter(live.url, live.secret, batch_size=100, retries=2)
    reporter.start(workflow="Generator", enterprise_id="acme")
    return reporter


def look_at_the_list(page) -> None:
    """Scroll the page (not the list) until the whole event list is on screen, as a reader would."""
    page.locator("#stream").evaluate("list => list.scrollIntoView({ block: 'end' })")


def post(reporter: RunReporter, events: list[dict]) -> None:
    for event in events:
        reporter.event(**event)
    assert reporter.flush(timeout=60)


def test_a_long_run_keeps_the_newest_rows_and_says_where_the_rest_are(page, live):
    reporter = fast_reporter(live)
    post(reporter, demo_events())  # interview_complete flips at #5
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(8)
    expect(page.locator("#stream-capped")).to_be_hidden()  # nothing left the list yet

    post(reporter, chatter(FLOOD))
    last = len(demo_events()) + FLOOD
    expect(page.locator("#run-seq")).to_have_text(str(last), timeout=30_000)
    newest = page.locator(f"#event-{last}")
    expect(newest).to_contain_text(f"msg {FLOOD - 1}")
    look_at_the_list(page)
    expect(newest).to_be_in_viewport()  # the list still follows the newest event
    expect(page.locator("#stream > li")).to_have_count(CAP)
    assert stream_seqs(page) == list(range(last - CAP + 1, last + 1))
    assert page.locator("#event-3").count() == 0  # an early event left the list...

    notice = page.locator("#stream-capped")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(f"Showing the last {CAP} events, from #{last - CAP + 1}")
    expect(notice).to_contain_text("Time travel reaches every event")
    link = notice.get_by_role("link", name="download all events (JSONL)")
    expect(link).to_have_attribute("href", page.locator("#download").get_attribute("href"))
    lines = page.request.get(link.get_attribute("href")).text().splitlines()
    assert [json.loads(line)["seq"] for line in lines[1:]] == list(range(1, last + 1))

    travel(page, 3)  # ...and time travel still shows the state after it
    expect(page.locator("#travel-note")).to_contain_text(f"after event #3 of {last}")
    expect(context_value(page, "interview_complete")).to_have_text("false")
    page.get_by_role("button", name="Back to live").click()
    expect(context_value(page, "interview_complete")).to_have_text("true")

    # Opened afresh, the page gets the server's window of past events and keeps the cap of them;
    # the one notice says which.
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(CAP)
    look_at_the_list(page)
    expect(page.locator(f"#event-{last}")).to_be_in_viewport()
    expect(page.locator("#stream-capped")).to_contain_text(
        f"Showing the last {CAP} events, from #{last - CAP + 1}"
    )
    expect(page.locator("#stream-window")).to_be_hidden()


def test_a_pause_during_a_flood_counts_every_event_and_keeps_the_newest(page, live):
    reporter = fast_reporter(live)
    open_run(page, reporter.run_id)
    post(reporter, chatter(10))
    expect(page.locator("#stream > li")).to_have_count(10)
    page.click("#pause")
    post(reporter, chatter(CAP + 200))
    last = 10 + CAP + 200
    expect(page.locator("#pause")).to_have_text(f"Resume live ({CAP + 200} new)", timeout=30_000)
    expect(page.locator("#stream > li")).to_have_count(10)  # paused: the list stands still

    page.click("#pause")
    expect(page.locator("#pause")).to_have_text("Pause live")
    expect(page.locator("#stream > li")).to_have_count(CAP)
    assert stream_seqs(page) == list(range(last - CAP + 1, last + 1))
    look_at_the_list(page)
    expect(page.locator(f"#event-{last}")).to_be_in_viewport()
    expect(page.locator("#stream-capped")).to_contain_text(
        f"Showing the last {CAP} events, from #{last - CAP + 1}"
    )


def test_a_value_set_many_times_lists_its_latest_changes(page, live):
    reporter = fast_reporter(live)
    values = [f"overview {i}" for i in range(1, 9)]
    post(
        reporter, [{"type": "context_set", "name": "concept_overview", "value": v} for v in values]
    )
    open_run(page, reporter.run_id)
    expect(context_value(page, "concept_overview")).to_have_text("overview 8")
    provenance = page.locator('#context tr[data-name="concept_overview"] td.provenance')
    expect(provenance).to_contain_text(
        "3 earlier changes not listed: time travel shows any of them"
    )
    expect(provenance.locator(".event-link")).to_have_text([f"at #{seq}" for seq in range(4, 9)])
    travel(page, 2)
    expect(context_value(page, "concept_overview")).to_have_text("overview 2")
