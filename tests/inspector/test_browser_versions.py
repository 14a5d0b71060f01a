"""Runs know their version, in a real browser (Debian Chromium against a real Daphne): a run
started at version 1 says so, and once version 2 is published it says it is outdated."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from playwright.sync_api import expect

from devservers.processes import manage
from tests.inspector.conftest import OUTPUT
from tests.support.demo import demo_config

pytestmark = pytest.mark.browser
HISTORY_OF_VERSION_1 = re.compile(r"^/admin/contextadmin/workflow/\d+/history/\?to=1$")


def test_a_run_shows_its_version_and_outdated_once_a_newer_one_is_published(page, live):
    workflow = f"Versioned{uuid.uuid4().hex[:6]}"  # its own workflow: the server is shared
    document = live.workdir / f"{workflow}.json"
    document.write_text(json.dumps(demo_config()))
    manage(live.env, "import_context", str(document), "--workflow", workflow)  # version 1
    reporter = live.reporter(workflow)

    page.goto(f"/runs/{reporter.run_id}/")
    version = page.locator("#run-version")
    expect(version.locator("#run-version-link")).to_have_text("version 1")
    expect(page.locator("#run-outdated")).to_have_count(0)

    changed = demo_config()
    changed["context_variables"]["declarative_variables"][1]["value"] = 30
    document.write_text(json.dumps(changed))
    manage(live.env, "import_context", str(document), "--workflow", workflow, "--replace")

    # the open page learns it without a reload (it re-reads the version when shown again,
    # and every 30 s)
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(page.locator("#run-outdated")).to_have_text(
        "outdated: ran version 1, version 2 is published"
    )
    page.reload()
    link = version.locator("#run-version-link")
    expect(link).to_have_text("version 1")
    # that version's page: the workflow's History, version 1 against the one before
    expect(link).to_have_attribute("href", HISTORY_OF_VERSION_1)
    badge = page.locator("#run-outdated")
    expect(badge).to_be_visible()
    expect(badge).to_have_text("outdated: ran version 1, version 2 is published")
    page.locator(".run-meta").screenshot(path=str(OUTPUT / "run-version-outdated.png"))

    later = live.reporter(workflow)  # a new run pins version 2 and is not outdated
    page.goto(f"/runs/{later.run_id}/")
    expect(page.locator("#run-version-link")).to_have_text("version 2")
    expect(page.locator("#run-outdated")).to_have_count(0)
