"""Two real Chromium sessions against real Daphne: no lost update, History, revert, approval."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devservers.processes import manage
from tests.contextadmin.conftest import EXAMPLE_PATH
from tests.support.busy import SETTLE_MS, Held, busy_state, watch
from tests.support.live_server import LiveServer, live_server_run

OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
pytestmark = pytest.mark.browser

CREATE_USER = (
    "from django.contrib.auth import get_user_model; "
    "get_user_model().objects.filter(username={name!r}).exists() or "
    "get_user_model().objects.create_superuser({name!r}, '', {password!r})"
)


def add_operator(server: LiveServer, name: str) -> str:
    password = secrets.token_urlsafe(12)
    server.manage("shell", "-c", CREATE_USER.format(name=name, password=password))
    return password


def session(chromium: Any, server: LiveServer, username: str, password: str) -> Any:
    """A browser context of its own (own cookies) logged in as ``username``; returns the page."""
    context = chromium.new_context(accept_downloads=True, viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.page_errors = []
    page.on("pageerror", lambda error: page.page_errors.append(str(error)))
    page.goto(f"{server.url}/admin/login/?next=/admin/contextadmin/workflow/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    return page


def open_workflow(page: Any, name: str) -> None:
    from playwright.sync_api import expect

    page.goto(page.url.split("/admin/")[0] + "/admin/contextadmin/workflow/")
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.locator("#id_name")).to_have_value(name)


def value_input(page: Any, name: str) -> Any:
    """The value input of the declarative variable called ``name``."""
    row = page.locator("tr.djn-tr", has=page.locator(f"input[value='{name}']"))
    return row.locator("input[name$='-value']")


def exported(server: LiveServer, workflow: str, *args: str) -> dict[str, Any]:
    """The exported definitions, without the export's own ``version`` key."""
    document = json.loads(server.manage("export_context", workflow, *args).stdout)
    document.pop("version")
    return document


def test_a_stale_tab_is_refused_keeps_what_was_typed_and_shows_the_diff(
    daphne_server: LiveServer, chromium: Any
) -> None:
    from playwright.sync_api import expect

    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "RaceFlow")
    colleague = add_operator(daphne_server, "colleague")
    tab_a = session(chromium, daphne_server, "colleague", colleague)
    tab_b = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    try:
        open_workflow(tab_a, "RaceFlow")
        open_workflow(tab_b, "RaceFlow")  # opened before tab A saves

        value_input(tab_a, "max_items").fill("30")
        tab_a.click("input[name=_continue]")
        expect(tab_a.locator("ul.messagelist")).to_contain_text("Saved as version 2, published.")

        value_input(tab_b, "product_tier").fill("ga")
        tab_b.fill("#id_version_comment", "GA launch")
        tab_b.click("input[name=_continue]")

        stale = tab_b.locator("#stale-edit")
        expect(stale).to_contain_text("version 2 was saved by colleague at")
        expect(tab_b.locator("#stale-diff .diff-changed")).to_contain_text(
            "declarative variable max_items"
        )
        expect(tab_b.locator("#stale-diff")).to_contain_text("value 25 → 30")
        # Everything typed is still there; nothing of it was stored.
        expect(value_input(tab_b, "product_tier")).to_have_value("ga")
        expect(tab_b.locator("#id_version_comment")).to_have_value("GA launch")
        assert (
            exported(daphne_server, "RaceFlow")["context_variables"]["declarative_variables"][0][
                "value"
            ]
            == "beta"
        )
        OUTPUT.mkdir(exist_ok=True)
        tab_b.screenshot(path=str(OUTPUT / "admin-stale-save-refused.png"), full_page=True)

        # The page holds tab A's change to a field tab B left alone: saving again keeps both.
        expect(value_input(tab_b, "max_items")).to_have_value("30")
        tab_b.click("input[name=_continue]")
        expect(tab_b.locator("ul.messagelist")).to_contain_text("Saved as version 3, published.")
        assert tab_a.page_errors == [] and tab_b.page_errors == []
    finally:
        tab_a.context.close()
        tab_b.context.close()

    values = exported(daphne_server, "RaceFlow")["context_variables"]["declarative_variables"]
    assert [v["value"] for v in values] == ["ga", 30]


def test_an_import_racing_a_save_is_refused_with_the_diff(
    daphne_server: LiveServer, chromium: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "ImportRace")
    changed = json.loads(EXAMPLE_PATH.read_bytes())
    changed["context_variables"]["declarative_variables"][0]["value"] = "from-file"
    upload = tmp_path / "context_variables.json"
    upload.write_text(json.dumps(changed))
    importer = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    editor = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    try:
        open_workflow(importer, "ImportRace")
        importer.get_by_role("link", name="Import…").click()
        importer.set_input_files("#id_file", str(upload))
        importer.click("#import-upload input[type=submit]")
        expect(importer.locator("#import-diff")).to_contain_text('value "beta" → "from-file"')

        open_workflow(editor, "ImportRace")  # saves between the preview and the apply
        value_input(editor, "max_items").fill("41")
        editor.click("input[name=_continue]")
        expect(editor.locator("ul.messagelist")).to_contain_text("Saved as version 2")

        importer.click("input[value='Apply import']")
        expect(importer.locator("#stale-edit")).to_contain_text("Version 2 was saved by operator")
        expect(importer.locator("#stale-diff")).to_contain_text("value 25 → 41")
        # The fresh preview shows the file would now undo the save as well; apply it knowingly.
        expect(importer.locator("#import-diff")).to_contain_text("value 41 → 25")
        importer.click("input[value='Apply import']")
        expect(importer.locator("ul.messagelist")).to_contain_text("Saved as version 3")
    finally:
        importer.context.close()
        editor.context.close()
    assert (
        exported(daphne_server, "ImportRace", "--version", "2")["context_variables"][
            "declarative_variables"
        ][1]["value"]
        == 41
    )


def test_history_shows_a_coloured_diff_and_reverts(
    daphne_server: LiveServer, chromium: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "HistFlow")
    changed = json.loads(EXAMPLE_PATH.read_bytes())
    changed["context_variables"]["declarative_variables"][1]["value"] = 7
    del changed["context_variables"]["environment_variables"][1]
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(changed))
    daphne_server.manage(
        "import_context", str(path), "--workflow", "HistFlow", "--replace", "--comment", "trim"
    )
    page = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    try:
        open_workflow(page, "HistFlow")
        expect(page.locator("#version-status")).to_contain_text("Version 2")
        page.get_by_role("link", name="History").first.click()
        expect(page.locator("#version-diff h2")).to_contain_text(
            "Version 1 → version 2: 0 added, 1 removed, 1 changed"
        )
        removed = page.locator("#history-diff .diff-removed")
        expect(removed).to_contain_text("environment variable monetization_enabled")
        changed_entry = page.locator("#history-diff .diff-changed")
        expect(changed_entry).to_contain_text("value 25 → 7")
        colours = {
            kind: page.locator(f"#history-diff .diff-{kind}").evaluate(
                "el => getComputedStyle(el).borderLeftColor"
            )
            for kind in ("removed", "changed")
        }
        assert colours["removed"] != colours["changed"]
        OUTPUT.mkdir(exist_ok=True)
        page.screenshot(path=str(OUTPUT / "admin-history-diff.png"), full_page=True)

        # Compare the other way round with the radio buttons.
        page.check("input[name=from][value='2']")
        page.check("input[name=to][value='1']")
        page.click("input[value='Compare selected versions']")
        expect(page.locator("#history-diff")).to_contain_text("value 7 → 25")

        page.locator("#version-1").get_by_role("link", name="Revert to this…").click()
        page.locator("#revert-form").get_by_role("button", name="Revert to version 1").click()
        expect(page.locator("ul.messagelist")).to_contain_text(
            "Reverted to version 1: Saved as version 3, published."
        )
        expect(page.locator("#version-3")).to_contain_text("reverted to version 1")
        assert page.page_errors == []
    finally:
        page.context.close()
    assert exported(daphne_server, "HistFlow") == json.loads(EXAMPLE_PATH.read_bytes())


@pytest.fixture(scope="module")
def review_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A second Daphne with CONTEXTADMIN_REVIEW=on and its own database."""
    yield from live_server_run(
        tmp_path_factory.mktemp("daphne-review"), username="author", CONTEXTADMIN_REVIEW="on"
    )


def test_a_draft_needs_another_operators_approval(review_server: LiveServer, chromium: Any) -> None:
    from playwright.sync_api import expect

    review_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "Reviewed")
    reviewer_password = add_operator(review_server, "reviewer")
    # The command-line import is a draft too: nothing is published yet.
    failed = manage(review_server.env, "export_context", "Reviewed", check=False)
    assert failed.returncode != 0 and "no published version yet" in failed.stderr
    author = session(chromium, review_server, review_server.username, review_server.password)
    reviewer = session(chromium, review_server, "reviewer", reviewer_password)
    try:
        # The reviewer publishes version 1 (the author of an import from the command line is
        # nobody in particular, so any operator may approve it).
        open_workflow(reviewer, "Reviewed")
        reviewer.get_by_role("link", name="History").first.click()
        reviewer.click("input[value='Approve and publish version 1']")
        expect(reviewer.locator("ul.messagelist")).to_contain_text("it is now published")

        open_workflow(author, "Reviewed")
        value_input(author, "max_items").fill("60")
        author.fill("#id_version_comment", "bigger pages")
        author.click("input[name=_continue]")
        expect(author.locator("ul.messagelist")).to_contain_text("Saved as version 2, a draft")
        expect(author.locator("#version-status")).to_contain_text("Draft")
        author.get_by_role("link", name="History").first.click()
        expect(author.locator("#own-draft")).to_contain_text("You wrote this draft")
        expect(author.locator("#approve-form input[type=submit]")).to_have_count(0)
        assert (
            exported(review_server, "Reviewed")["context_variables"]["declarative_variables"][1][
                "value"
            ]
            == 25
        )

        reviewer.goto(reviewer.url.split("?")[0])  # the History page, newest version
        expect(reviewer.locator("#version-diff h2")).to_contain_text("Version 1 → version 2")
        expect(reviewer.locator("#history-diff")).to_contain_text("value 25 → 60")
        reviewer.fill("#approve-comment", "ok for prod")
        posts = Held(reviewer, lambda request: request.method == "POST")
        states = watch(reviewer, "#approve-form input[type=submit]", "approve-status")
        reviewer.locator("input[value='Approve and publish version 2']").dblclick()
        shown = busy_state(reviewer, states)  # said at once, and a double click posts once
        assert shown["text"] == "Approving and publishing version 2…" and shown["disabled"]
        reviewer.wait_for_timeout(SETTLE_MS)
        assert len(posts.seen) == 1
        posts.release(reviewer)
        expect(reviewer.locator("ul.messagelist")).to_contain_text(
            "Approved version 2: it is now published."
        )
        expect(reviewer.locator("#version-2")).to_contain_text("approved by reviewer")
        assert author.page_errors == [] and reviewer.page_errors == []
    finally:
        author.context.close()
        reviewer.context.close()
    assert (
        exported(review_server, "Reviewed")["context_variables"]["declarative_variables"][1][
            "value"
        ]
        == 60
    )


def test_edit_page_fits_the_work(daphne_server: LiveServer, chromium: Any) -> None:
    """Type-aware trigger rows, the production warning before saving, one-pass errors."""
    from playwright.sync_api import expect

    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "EditFlow")
    page = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    try:
        open_workflow(page, "EditFlow")
        trigger = "#id_derived_variables-0-triggers-0-"
        # agent_text: agent, text, case and trim; no count, tool or status.
        for field in ("agent", "equals", "case_sensitive", "trim"):
            expect(page.locator(f"{trigger}{field}")).to_be_visible()
        for field in ("count", "tool", "status"):
            expect(page.locator(f"{trigger}{field}")).not_to_be_visible()
        page.select_option(f"{trigger}type", "tool_response")
        expect(page.locator(f"{trigger}tool")).to_be_visible()
        expect(page.locator(f"{trigger}status")).to_be_visible()
        for field in ("agent", "equals", "case_sensitive", "trim", "count"):
            expect(page.locator(f"{trigger}{field}")).not_to_be_visible()
        page.select_option(f"{trigger}type", "agent_turn_count")
        expect(page.locator(f"{trigger}count")).to_be_visible()
        expect(page.locator(f"{trigger}trim")).not_to_be_visible()

        # A hand-off gated on an environment variable is flagged while typing.
        expect(page.locator("#production-warnings")).to_be_hidden()
        page.locator(".djn-add-handler.djn-model-contextadmin-handoff").click()
        page.fill("#id_handoffs-0-source_agent", "InterviewAgent")
        page.fill("#id_handoffs-0-target_agent", "PlannerAgent")
        page.fill("#id_handoffs-0-condition", "${interview_complete} and ${context_aware}")
        warning = page.locator("#id_handoffs-0-condition ~ .production-warning")
        expect(warning).to_have_text(
            "never fires in production: environment variables are suppressed (context_aware)"
        )
        expect(page.locator("#production-warnings")).to_contain_text(
            "hand-off InterviewAgent → PlannerAgent when ${interview_complete} and "
            "${context_aware}: never fires in production"
        )
        assert page.locator("#id_handoffs-0-condition").get_attribute("list") == ("condition-names")
        page.fill("#id_handoffs-0-condition", "${interview_complete}")
        expect(warning).to_have_count(0)
        expect(page.locator("#production-warnings")).to_be_hidden()
        page.fill("#id_handoffs-0-condition", "${interview_complete} and ${context_aware}")

        # The turn-count trigger saves without stale agent_text options; the warning stays.
        page.fill(f"{trigger}count", "3")
        page.click("input[name=_continue]")
        expect(page.locator("ul.messagelist")).to_contain_text("Saved as version 2")
        expect(page.locator("#production-warnings")).to_be_visible()
        expect(page.locator(f"{trigger}trim")).not_to_be_visible()
        # Columns no row of the table uses are gone, headers and cells alike.
        headers = page.locator("#derived_variables-0 th.djn-th:visible")
        expect(headers).to_have_text(["Type", "Agent", "Turn count", "Delete?"])
        OUTPUT.mkdir(exist_ok=True)
        page.screenshot(path=str(OUTPUT / "admin-edit-page.png"), full_page=True)

        # Every problem at once: a field error, a duplicate name and an "or" condition.
        value_input(page, "max_items").fill("many")
        page.locator("#id_database_variables-0-name").fill("product_tier")
        page.fill("#id_handoffs-0-condition", "${interview_complete} or ${context_aware}")
        page.click("input[name=_continue]")
        issues = page.locator("#document-issues li")
        expect(issues).to_have_count(3)
        expect(page.locator("#document-issues")).to_contain_text(
            "declarative_variables[1] (max_items).value: must be an integer"
        )
        expect(page.locator("#document-issues")).to_contain_text(
            "database_variables[0] (product_tier).name: product_tier is already declared"
        )
        expect(page.locator("#document-issues")).to_contain_text(
            "handoffs[0] (InterviewAgent → PlannerAgent).condition:"
        )
        page.screenshot(path=str(OUTPUT / "admin-one-pass-errors.png"), full_page=True)
        assert page.page_errors == []
    finally:
        page.context.close()
    derived = exported(daphne_server, "EditFlow")["context_variables"]["derived_variables"]
    assert derived[0]["triggers"] == [
        {"type": "agent_turn_count", "agent": "InterviewAgent", "count": 3}
    ]


@pytest.mark.parametrize("width", [1366, 400])
def test_the_workflow_page_fits_the_screen(
    daphne_server: LiveServer, chromium: Any, width: int
) -> None:
    """No table overflows at 1366 px; at 400 px the inputs stack instead of scrolling away."""
    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", f"Fit{width}")
    page = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    try:
        page.set_viewport_size({"width": width, "height": 900})
        open_workflow(page, f"Fit{width}")
        overflowing = page.evaluate(
            """() => Array.from(document.querySelectorAll('#workflow_form .djn-group'))
                .filter(g => g.scrollWidth > g.clientWidth + 1
                    || Array.from(g.querySelectorAll('.tabular, table'))
                        .some(t => t.scrollWidth > t.clientWidth + 1))
                .map(g => g.id)"""
        )
        page_wider = page.evaluate(
            "() => document.documentElement.scrollWidth > window.innerWidth + 1"
        )
        OUTPUT.mkdir(exist_ok=True)
        page.screenshot(path=str(OUTPUT / f"admin-workflow-{width}px.png"), full_page=True)
        assert overflowing == [] and not page_wider, overflowing
        assert page.page_errors == []
    finally:
        page.context.close()
