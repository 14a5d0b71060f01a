"""Long work says so (static/contextadmin/busy.js), in real Chromium against real Daphne; the
server is made slow deterministically (tests/support/busy.py). Approve's is in
test_browser_versions.py, with the review server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.contextadmin.conftest import EXAMPLE_PATH
from tests.contextadmin.test_browser_versions import open_workflow, session, value_input
from tests.support.busy import SETTLE_MS, Held, busy_state, watch
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.browser


def operator_page(server: LiveServer, chromium: Any, workflow: str) -> Any:
    server.manage("import_context", str(EXAMPLE_PATH), "--workflow", workflow)
    page = session(chromium, server, server.username, server.password)
    open_workflow(page, workflow)
    return page


def test_save_says_saving_disables_its_buttons_and_posts_once(
    daphne_server: LiveServer, chromium: Any
) -> None:
    page = operator_page(daphne_server, chromium, "BusySave")
    try:
        change_url = page.url
        posts = Held(page, lambda request: request.method == "POST" and request.url == change_url)
        value_input(page, "max_items").fill("31")
        states = watch(page, "input[name=_continue]", "save-status")
        page.locator("input[name=_continue]").dblclick()

        shown = busy_state(page, states)
        assert shown["text"] == "Saving BusySave…"
        assert shown["live"] == ["status", "polite"]
        assert shown["disabled"] and shown["busy"] == "true"
        page.keyboard.press("Enter")  # a second Enter sends nothing either
        page.wait_for_timeout(SETTLE_MS)
        assert len(posts.seen) == 1
        # The button pressed still counts: Django keeps the operator on the page.
        assert "_continue=" in posts.seen[0].post_data

        posts.release(page)
        expect(page.locator("ul.messagelist")).to_contain_text("You may edit it again below")
        expect(page.locator("ul.messagelist")).to_contain_text("Saved as version 2, published.")
        expect(value_input(page, "max_items")).to_have_value("31")
        expect(page.locator("input[name=_continue]")).to_be_enabled()
        expect(page.locator("#save-status")).to_be_empty()
        assert len(posts.seen) == 1
        assert page.page_errors == []
    finally:
        page.context.close()


def test_enter_twice_posts_once_and_a_refused_save_comes_back_usable(
    daphne_server: LiveServer, chromium: Any
) -> None:
    page = operator_page(daphne_server, chromium, "BusyRefused")
    try:
        posts = Held(page, lambda request: request.method == "POST")
        states = watch(page, "input[name=_save]", "save-status")
        value_input(page, "max_items").fill("many")
        page.keyboard.press("Enter")  # the form's default button: Save
        assert busy_state(page, states)["text"] == "Saving BusyRefused…"
        page.keyboard.press("Enter")
        page.wait_for_timeout(SETTLE_MS)
        assert len(posts.seen) == 1

        posts.release(page)
        expect(page.locator("#document-issues")).to_contain_text(
            "(max_items).value: must be an integer"
        )
        expect(value_input(page, "max_items")).to_have_value("many")
        expect(page.locator("input[name=_save]")).to_be_enabled()
        expect(page.locator("#save-status")).to_be_empty()
        assert len(posts.seen) == 1
        assert page.page_errors == []
    finally:
        page.context.close()


def test_history_replay_says_replaying_and_runs_once(
    daphne_server: LiveServer, chromium: Any
) -> None:
    page = operator_page(daphne_server, chromium, "BusyReplay")
    try:
        page.get_by_role("link", name="History").first.click()
        replay = page.get_by_role("link", name="Replay recent runs under version 1")
        replays = Held(page, lambda request: "impact=1" in request.url)
        states = watch(page, "#impact-replay", "impact-status")
        replay.dblclick()

        shown = busy_state(page, states)
        assert shown["text"] == (
            "Replaying recent runs under version 1 (the last 100 runs at most, 10 s at most)…"
        )
        assert shown["live"] == ["status", "polite"]
        assert shown["disabled"] and shown["busy"] == "true"
        page.keyboard.press("Enter")  # the link keeps the focus: nor from the keyboard
        page.wait_for_timeout(SETTLE_MS)
        assert len(replays.seen) == 1

        replays.release(page)
        expect(page.locator("#impact h3")).to_contain_text("Impact on recorded runs: 0 of 0")
        assert len(replays.seen) == 1
        page.unroute("**/*")
        page.go_back()  # the page it came from works as before
        expect(replay).not_to_have_attribute("aria-disabled", "true")
        expect(page.locator("#impact-status")).to_be_empty()
        replay.click()
        expect(page.locator("#impact h3")).to_contain_text("Impact on recorded runs")
        assert page.page_errors == []
    finally:
        page.context.close()


def test_a_lost_request_or_a_return_to_the_page_leaves_it_usable(
    daphne_server: LiveServer, chromium: Any
) -> None:
    page = operator_page(daphne_server, chromium, "BusyFailed")
    try:
        posts = Held(page, lambda request: request.method == "POST")
        save = page.get_by_role("button", name="Save", exact=True)
        # Lost without an error page (Chromium drops an aborted navigation silently): the page
        # gives up waiting after data-busy-patience seconds, here 1.
        page.locator("#save-status").evaluate("region => { region.dataset.busyPatience = '1'; }")
        states = watch(page, "input[name=_save]", "save-status")
        value_input(page, "max_items").fill("32")
        save.click(no_wait_after=True)
        assert busy_state(page, states)["disabled"]
        posts.arrived(page).pop().abort("aborted")
        expect(save).to_be_enabled()
        expect(page.locator("#save-status")).to_contain_text("You can wait, or try again.")
        expect(value_input(page, "max_items")).to_have_value("32")

        # Back to a page left busy (the back/forward cache): usable as before the click.
        during, after = page.evaluate(
            """() => {
              const save = document.querySelector("input[name=_save]");
              save.click();
              const during = save.disabled;
              dispatchEvent(new PageTransitionEvent("pageshow", { persisted: true }));
              return [during, save.disabled];
            }"""
        )
        assert during and not after
        posts.arrived(page).pop().abort("aborted")
        expect(page.locator("input[type=hidden][name=_save]")).to_have_count(0)

        save.click(no_wait_after=True)
        posts.release(page)
        expect(page.locator("ul.messagelist")).to_contain_text("was changed successfully")
        assert page.page_errors == []
    finally:
        page.context.close()


def test_import_and_revert_say_what_they_do(
    daphne_server: LiveServer, chromium: Any, tmp_path: Path
) -> None:
    page = operator_page(daphne_server, chromium, "BusyImport")
    changed = json.loads(EXAMPLE_PATH.read_bytes())
    changed["context_variables"]["declarative_variables"][1]["value"] = 26
    upload = tmp_path / "context_variables.json"
    upload.write_text(json.dumps(changed))
    try:
        posts = Held(page, lambda request: request.method == "POST")
        page.get_by_role("link", name="Import…").click()
        page.set_input_files("#id_file", str(upload))
        states = watch(page, "#import-upload input[type=submit]", "import-upload-status")
        page.click("#import-upload input[type=submit]", no_wait_after=True)
        shown = busy_state(page, states)
        assert shown["disabled"] and shown["text"].startswith("Checking the file")
        posts.release(page)

        expect(page.locator("#import-diff")).to_contain_text("value 25 → 26")
        states = watch(page, "input[value='Apply import']", "import-apply-status")
        page.locator("input[value='Apply import']").dblclick()
        shown = busy_state(page, states)
        assert shown["text"] == "Importing into BusyImport (0 added, 0 removed, 1 changed)…"
        assert shown["disabled"]
        page.wait_for_timeout(SETTLE_MS)
        assert len(posts.seen) == 2
        posts.release(page)
        expect(page.locator("ul.messagelist")).to_contain_text("Saved as version 2")

        page.get_by_role("link", name="History").first.click()
        page.locator("#version-1").get_by_role("link", name="Revert to this…").click()
        expect(page.locator("#revert-form")).to_be_visible()
        states = watch(page, "#revert-form input[type=submit]", "revert-status")
        page.locator("#revert-form input[type=submit]").dblclick()
        shown = busy_state(page, states)
        assert shown["text"] == "Reverting to version 1…" and shown["disabled"]
        page.wait_for_timeout(SETTLE_MS)
        assert len(posts.seen) == 3
        posts.release(page)
        expect(page.locator("ul.messagelist")).to_contain_text("Reverted to version 1")
        assert page.page_errors == []
    finally:
        page.context.close()
