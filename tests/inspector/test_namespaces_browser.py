"""Seed 004 on the run page (Chromium against a real Daphne): what a tool's output mapping wrote
appears live under agent, "set by tool …", follows time travel and resolves in the preview."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from devservers.processes import manage
from tests.inspector.test_browser import open_run, travel
from tests.support.demo import demo_config

pytestmark = pytest.mark.browser

KEYWORDS = {"tool": "extract_keywords", "field": "keywords", "to": "agent.intermediate.keywords"}


@pytest.fixture(scope="module")
def research(live):
    path = live.workdir / "research.json"
    path.write_text(json.dumps({**demo_config(), "outputs": [KEYWORDS]}))
    manage(live.env, "import_context", str(path), "--workflow", "Research")
    return "Research"


def keywords_row(page):
    return page.locator('#namespaces tr[data-path="agent.intermediate.keywords"]')


def test_run_page_shows_the_value_under_agent_set_by_tool(page, live, research):
    reporter = live.reporter(workflow=research)
    reporter.event(type="agent_text", agent="InterviewAgent", text="find the X report")
    reporter.event(type="tool_response", tool="extract_keywords", status="success",
                   data={"keywords": ["project X", "last 7 days"]})
    open_run(page, reporter.run_id)

    row = keywords_row(page)
    expect(row.locator("td.value")).to_have_text('["project X","last 7 days"]')
    expect(row.locator("td.provenance")).to_contain_text("set by tool extract_keywords at #2")
    expect(page.locator("#namespaces table[data-namespace=agent] caption")).to_have_text("agent")
    expect(page.locator("#stream li#event-2 .ev-flips")).to_contain_text(
        "agent.intermediate.keywords ← data.keywords")

    # a later response overwrites it live, with the new seq
    reporter.event(type="tool_response", tool="extract_keywords", status="success",
                   data={"keywords": ["project Y"]})
    expect(row.locator("td.value")).to_have_text('["project Y"]')
    expect(row.locator("td.provenance")).to_contain_text("set by tool extract_keywords at #3")
    # a response without the field writes nothing, and says so in the stream
    reporter.event(type="tool_response", tool="extract_keywords", status="error")
    expect(page.locator("#stream li#event-4 .ev-flips")).to_contain_text(
        "agent.intermediate.keywords not written")
    expect(row.locator("td.value")).to_have_text('["project Y"]')

    page.fill("#template-input", "Search {{agent.intermediate.keywords}}")
    expect(page.locator("#template-output")).to_have_text('Search ["project Y"]')

    # time travel reaches the namespaces too
    travel(page, 2)
    expect(page.locator("#travel-note")).to_contain_text("after event #2")
    expect(row.locator("td.value")).to_have_text('["project X","last 7 days"]')
    expect(page.locator("#template-output")).to_have_text('Search ["project X","last 7 days"]')
    travel(page, 1)
    expect(page.locator("#namespaces")).to_contain_text("Nothing written yet")
    page.get_by_role("button", name="Back to live").click()
    expect(row.locator("td.value")).to_have_text('["project Y"]')
    page.fill("#compare-a", "1")
    page.fill("#compare-b", "3")
    page.click("#compare button[type=submit]")
    expect(page.locator("#compare-result tr", has_text="agent.intermediate")).to_contain_text(
        "project Y")

    # a reload rebuilds it from the snapshot
    page.reload()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(row.locator("td.provenance")).to_contain_text("set by tool extract_keywords at #3")
