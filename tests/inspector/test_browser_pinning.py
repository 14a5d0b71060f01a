"""What a run ran with, in a real browser (Debian Chromium against a real Daphne): the runtime
that reported it in the header, and definitions never published here shown as such, with the
diff against the published version."""

from __future__ import annotations

import json
import uuid

import pytest
from contextadmin_sdk.client.definitions import runtime_info
from contextadmin_sdk.engine import format as fmt
from playwright.sync_api import expect

from devservers.processes import manage
from tests.inspector.conftest import OUTPUT
from tests.support.demo import demo_config

pytestmark = pytest.mark.browser


def test_a_run_of_local_definitions_shows_its_runtime_and_the_diff(page, live):
    workflow = f"Pinned{uuid.uuid4().hex[:6]}"  # its own workflow: the server is shared
    document = live.workdir / f"{workflow}.json"
    document.write_text(json.dumps(demo_config()))
    manage(live.env, "import_context", str(document), "--workflow", workflow)  # version 1
    local = demo_config()
    local["context_variables"]["declarative_variables"][1]["value"] = 99  # edited on the host
    config = fmt.parse_config(local).config
    reporter = live.reporter(
        workflow, definitions=config, runtime=runtime_info(framework="ag2", version="1.2.1")
    )

    page.goto(f"/runs/{reporter.run_id}/")
    expect(page.locator("#run-runtime")).to_have_text(
        f"AG2 1.2.1 · SDK {runtime_info(framework='ag2', version='1')['sdk']}"
    )
    expect(page.locator("#run-not-published")).to_have_text("definitions not published here")
    expect(page.locator("#run-version-link")).to_have_count(0)
    diff = page.locator("#run-definitions-diff")
    diff.locator("summary").click()
    expect(diff).to_contain_text("~ declarative variable max_items: value 25 → 99")
    page.locator(".run-meta").screenshot(path=str(OUTPUT / "run-not-published-here.png"))
