"""One real browser: an operator adds a derived variable with a trigger and downloads the export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.contextadmin.conftest import EXAMPLE_PATH
from tests.support.live_server import LiveServer

OUTPUT = Path(__file__).resolve().parents[2] / "test-output"


@pytest.mark.browser
def test_operator_adds_a_derived_variable_with_a_trigger_and_downloads_it(
    daphne_server: LiveServer, chromium: Any
) -> None:
    from playwright.sync_api import expect

    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "BrowserFlow")
    OUTPUT.mkdir(exist_ok=True)

    context = chromium.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
    try:
        page = daphne_server.admin_page(context, next="/admin/contextadmin/workflow/")
        page.get_by_role("link", name="BrowserFlow", exact=True).click()
        expect(page.locator("#id_derived_variables-0-name")).to_have_value("interview_complete")

        page.locator(".djn-add-handler.djn-model-contextadmin-derivedvariable").click()
        page.fill("#id_derived_variables-1-name", "review_done")
        page.fill("#id_derived_variables-1-description", "True once ReviewAgent approves")
        page.locator("#derived_variables-1 .djn-add-handler.djn-model-contextadmin-trigger").click()
        page.select_option("#id_derived_variables-1-triggers-0-type", "agent_text")
        page.fill("#id_derived_variables-1-triggers-0-agent", "ReviewAgent")
        page.fill("#id_derived_variables-1-triggers-0-equals", "APPROVED")
        page.click("input[name=_continue]")

        expect(page.locator("ul.messagelist li.success")).to_contain_text(
            "was changed successfully"
        )
        expect(page.locator(".errornote")).to_have_count(0)
        expect(page.locator("#id_derived_variables-1-triggers-0-agent")).to_have_value(
            "ReviewAgent"
        )
        page.screenshot(
            path=str(OUTPUT / "admin-derived-variable-with-trigger.png"), full_page=True
        )

        with page.expect_download() as download_info:
            page.get_by_role("link", name="Download BrowserFlow.v2.context_variables.json").click()
        download = download_info.value
        # Named after the workflow and the version the page shows (issue 16).
        assert download.suggested_filename == "BrowserFlow.v2.context_variables.json"
        exported = json.loads(Path(download.path()).read_bytes())
        assert page.page_errors == []
    finally:
        context.close()

    derived = exported["context_variables"]["derived_variables"]
    assert [variable["name"] for variable in derived] == ["interview_complete", "review_done"]
    assert derived[1] == {
        "name": "review_done",
        "type": "boolean",
        "description": "True once ReviewAgent approves",
        "default": False,
        "triggers": [
            {"type": "agent_text", "agent": "ReviewAgent", "match": {"equals": "APPROVED"}}
        ],
    }
