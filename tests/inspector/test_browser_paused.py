"""Paused runs are runs: the front page's "live now" and the run page keep a paused run live,
and it resumes to running (Debian Chromium against a real Daphne)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_a_paused_run_stays_live_now_until_it_ends(page, live):
    page.goto("/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    reporter = live.reporter(enterprise_id="paused-front")
    row = page.locator(f'#live-runs li[data-run-id="{reporter.run_id}"]')
    expect(row).to_contain_text("running")
    reporter.event("run_status", status="paused")
    expect(row.locator(".pill")).to_have_text("paused")  # still live now
    reporter.event("run_status", status="running")
    expect(row.locator(".pill")).to_have_text("running")
    reporter.event("run_status", status="cancelled")
    expect(row).to_have_count(0)


def test_the_run_page_never_shows_a_paused_run_as_ended(page, live):
    reporter = live.reporter(enterprise_id="paused-page")
    page.goto(f"/runs/{reporter.run_id}/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    reporter.event("run_status", status="paused")
    expect(page.locator("#run-status")).to_have_text("paused")
    expect(page.locator("#run-ended")).to_have_text("not yet")
    reporter.event("run_status", status="running")
    expect(page.locator("#run-status")).to_have_text("running")
    reporter.event("run_status", status="completed")
    expect(page.locator("#run-status")).to_have_text("completed")
    expect(page.locator("#run-ended")).not_to_have_text("not yet")
    page.goto("/runs/?status=paused")
    expect(page.locator("#search-error")).to_have_count(0)
