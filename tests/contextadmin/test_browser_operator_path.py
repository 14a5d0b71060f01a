"""Issue 22, the admin side of the operator's path in real Chromium against real Daphne: the
workflow page's header and inputs at 1366 px and 400 px, History's guidance on review, and a
revert that asks first and shows what it changes (light and dark)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.contextadmin.conftest import EXAMPLE_PATH
from tests.contextadmin.test_browser_versions import exported, open_workflow, session, value_input
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.browser


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
    )


def test_workflow_page_header_and_inputs_fit_at_1366_and_400_px(
    daphne_server: LiveServer, chromium: Any
) -> None:
    from playwright.sync_api import expect

    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "WideFlow")
    page = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    try:
        open_workflow(page, "WideFlow")
        # 1366 px: five header buttons wrap, below the workflow's heading, never over it
        heading = page.locator("#content h2").first.bounding_box()
        for button in page.locator(".object-tools li").all():
            assert not overlaps(button.bounding_box(), heading), button.inner_text()
        # every text input of the category tables shows its whole value
        clipped = page.eval_on_selector_all(
            "#workflow_form .djn-group td input.vTextField",
            "inputs => inputs.filter(i => i.value && i.scrollWidth > i.clientWidth + 1)"
            ".map(i => `${i.name}=${i.value}`)",
        )
        assert clipped == [], clipped

        page.set_viewport_size({"width": 400, "height": 900})
        page.reload()
        expect(page.locator("#id_name")).to_have_value("WideFlow")
        # 400 px: a row's title sits above its fields, not over its first label ("Name")
        rows = page.locator("#workflow_form .djn-group tr.djn-tr.has_original")
        assert rows.count() >= 5
        for index in range(rows.count()):
            row = rows.nth(index)
            title = row.locator("td.original p").bounding_box()
            first_field = row.locator("td[data-label]").first.bounding_box()
            assert title["width"] > 40, "the title is squeezed into the drag handle's column"
            assert title["y"] + title["height"] <= first_field["y"] + 1, row.inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= 400
    finally:
        page.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_revert_asks_first_shows_the_change_and_says_it_publishes(
    daphne_server: LiveServer, chromium: Any, scheme: str
) -> None:
    from playwright.sync_api import expect

    name = f"RevertFlow{scheme}"
    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", name)
    page = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    page.emulate_media(color_scheme=scheme)
    try:
        open_workflow(page, name)
        value_input(page, "max_items").fill("7")
        page.click("input[name=_continue]")
        expect(page.locator("ul.messagelist")).to_contain_text("Saved as version 2, published.")
        page.click("#version-status a")  # History
        # review is off: History says so and how to turn it on
        expect(page.locator(".contextadmin-history > p.help")).to_contain_text(
            "Review is off: every save is published at once.")
        expect(page.locator(".contextadmin-history > p.help")).to_contain_text(
            "CONTEXTADMIN_REVIEW=on")

        revert = page.locator("#version-1 .revert-button")
        # a styled button in either scheme, like the page's own submit button
        background = revert.evaluate("el => getComputedStyle(el).backgroundColor")
        submit = page.locator("#compare-form input[type=submit]").evaluate(
            "el => getComputedStyle(el).backgroundColor")
        assert background == submit, (background, submit)

        revert.click()
        # nothing happened yet: the diff of what the revert changes, and a question
        expect(page.locator("#history-diff")).to_contain_text("value 7 → 25")
        expect(page.locator("#revert-consequence")).to_contain_text("published at once")
        expect(page.locator("#version-3")).to_have_count(0)
        assert exported(daphne_server, name)["context_variables"]["declarative_variables"][1][
            "value"] == 7
        page.click("#revert-cancel")
        expect(page.locator("#revert-form")).to_have_count(0)
        expect(page.locator("#version-3")).to_have_count(0)

        page.locator("#version-1 .revert-button").click()
        page.fill("#revert-comment", "back to 25")
        page.click("#revert-form input[type=submit]")
        expect(page.locator("ul.messagelist")).to_contain_text(
            "Reverted to version 1: Saved as version 3, published.")
        expect(page.locator("#version-3")).to_contain_text("back to 25")
        assert exported(daphne_server, name) == json.loads(EXAMPLE_PATH.read_bytes())
        assert page.page_errors == []
    finally:
        page.context.close()

