"""The run page shows what the chat routes on: a flag a tool set explicitly ("set by tool
save_plan at #N") and the changes the run refused (warning events, counted in the header), live,
in Debian Chromium against a real Daphne."""

from __future__ import annotations

import pytest
from contextadmin_sdk.integrations.context_sync import deleted_text
from playwright.sync_api import expect

from tests.inspector.test_browser import context_value, open_run

pytestmark = pytest.mark.browser

SET_BY_TOOL = {"type": "context_set", "name": "interview_complete", "value": True,
               "agent": "InterviewAgent", "tool": "save_plan"}
REFUSED = {"type": "warning", "name": "max_items", "value": 40, "agent": "InterviewAgent",
           "tool": "tune_limits", "rule": "constant",
           "text": "name: declarative variable max_items is a constant: it never changes during "
                   "a run"}


def send(reporter, event: dict) -> None:
    fields = dict(event)
    reporter.event(fields.pop("type"), **fields)


def test_a_flag_set_by_a_tool_and_refused_changes_show_live(page, live):
    reporter = live.reporter()
    reporter.event("agent_text", agent="user", text="hello")
    open_run(page, reporter.run_id)
    expect(page.locator("#run-warnings-count")).to_have_text("0")

    send(reporter, SET_BY_TOOL)
    expect(context_value(page, "interview_complete")).to_have_text("true")
    provenance = page.locator('#context tr[data-name="interview_complete"] td.provenance')
    expect(provenance).to_contain_text("set by tool save_plan at #2")
    expect(page.locator("#event-2")).to_contain_text("(set by tool save_plan)")
    expect(page.locator("#event-2 .ev-flips")).to_contain_text("interview_complete → true")
    strip = page.locator('#timeline .strip[data-flag="interview_complete"] .mark')
    expect(strip).to_have_attribute("aria-label", "interview_complete set by tool save_plan at #2")

    send(reporter, REFUSED)
    expect(page.locator("#run-warnings-count")).to_have_text("1")
    row = page.locator("#event-3")
    expect(row).to_have_attribute("data-type", "warning")
    expect(row).to_contain_text("refused max_items = 40 by tool tune_limits")
    expect(row).to_contain_text("constant")
    expect(row).to_contain_text("declarative variable max_items is a constant")
    expect(context_value(page, "max_items")).to_have_text("25")  # refused: unchanged

    # the header's count filters the events list to the warnings
    page.click("#run-warnings-link")
    expect(page.locator("#stream > li:visible")).to_have_count(1)
    expect(page.locator("#filter-type")).to_have_value("warning")

    # a reload renders the same from the server: the flip's cause and the count
    page.goto(f"/runs/{reporter.run_id}/?type=warning")
    expect(page.locator("#run-warnings-count")).to_have_text("1")
    expect(page.locator("#run-warnings")).to_have_attribute("data-count", "1")
    provenance = page.locator('#context tr[data-name="interview_complete"] td.provenance')
    expect(provenance).to_contain_text("set by tool save_plan at #2")
    expect(page.locator("#stream > li:visible")).to_have_count(1)
    reporter.close()


DELETED = {"type": "warning", "name": "max_items", "value": None, "tool": "drop_limits",
           "rule": "deleted", "text": deleted_text("max_items")}


def test_a_deleted_variable_reads_as_a_deletion_not_a_set_to_null(page, live):
    reporter = live.reporter()
    send(reporter, DELETED)
    open_run(page, reporter.run_id)
    row = page.locator("#event-1")
    expect(row).to_contain_text("refused deleting max_items by tool drop_limits")
    expect(row).not_to_contain_text("= null")
    expect(row.locator(".warning-rule")).to_have_text("deleted")
    expect(context_value(page, "max_items")).to_have_text("25")  # the run keeps its value
    reporter.close()
