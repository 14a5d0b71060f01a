"""Rows reorder from the keyboard: a hand-off's order is its rule's index, so an operator who
does not drag must still be able to change it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.support.live_server import LiveServer

OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
CHAT = settings.BASE_DIR / "contextadmin" / "demo" / "ag2_context_variables.json"


def _rules(server: LiveServer) -> list[tuple[str, str]]:
    handoffs = json.loads(server.manage("export_context", "KeyFlow").stdout)["handoffs"]
    return [(h["source_agent"], h["target_agent"]) for h in handoffs]


@pytest.mark.browser
def test_an_operator_moves_a_handoff_down_with_the_keyboard_and_its_rule_index_follows(
    daphne_server: LiveServer, chromium: Any
) -> None:
    from playwright.sync_api import expect

    daphne_server.manage("import_context", str(CHAT), "--workflow", "KeyFlow")
    before = _rules(daphne_server)
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = daphne_server.admin_page(context, next="/admin/contextadmin/workflow/")
        page.get_by_role("link", name="KeyFlow", exact=True).click()

        first = f"{before[0][0]} → {before[0][1]}"
        up = page.get_by_role("button", name=f"Move {first} up")
        down = page.get_by_role("button", name=f"Move {first} down")
        expect(up).to_be_disabled()  # already first
        down.focus()
        page.keyboard.press("Enter")
        expect(page.locator("#reorder-status")).to_have_text(
            f"{first}: moved to position 2 of {len(before)}"
        )
        expect(up).to_be_enabled()
        rows = page.locator("tbody.djn-inline-form[id^='handoffs-']:not([id$='-empty'])")
        expect(rows.nth(1).locator("td.original p")).to_contain_text(first)
        assert page.evaluate("document.activeElement.className") in ("reorder-down", "reorder-up")
        OUTPUT.mkdir(exist_ok=True)
        page.locator("#handoffs-group").screenshot(path=str(OUTPUT / "admin-reorder-handoffs.png"))

        page.click("input[name=_continue]")
        expect(page.locator("ul.messagelist li.success")).to_contain_text("was changed")
        assert page.page_errors == []
    finally:
        context.close()
    assert _rules(daphne_server) == [before[1], before[0], *before[2:]]
