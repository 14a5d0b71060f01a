"""The workflow page's recent runs per version, in a real browser (Chromium against Daphne):
listed under the version each run pinned, linked to the inspector, and fitting the screen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.contextadmin.conftest import EXAMPLE_PATH
from tests.contextadmin.test_browser_versions import open_workflow, session
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.browser
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
START_RUNS = (
    "from runs.services.lifecycle import run_start\n"
    "for i in range({count}):\n"
    "    print(run_start(workflow_name={workflow!r}, enterprise_id=f'acme-{{i}}').run.pk)\n"
)


def start_runs(server: LiveServer, workflow: str, count: int) -> list[str]:
    done = server.manage("shell", "-c", START_RUNS.format(count=count, workflow=workflow))
    return done.stdout.split()[-count:]


@pytest.mark.parametrize("width", [1366, 400])
def test_the_workflow_page_lists_recent_runs_per_version(
    daphne_server: LiveServer, chromium: Any, tmp_path: Path, width: int
) -> None:
    from playwright.sync_api import expect

    workflow = f"RunsPer{width}"
    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", workflow)
    old = start_runs(daphne_server, workflow, 2)
    changed = json.loads(EXAMPLE_PATH.read_text())
    changed["context_variables"]["declarative_variables"][0]["description"] = "changed"
    (tmp_path / "v2.json").write_text(json.dumps(changed))
    daphne_server.manage(
        "import_context", str(tmp_path / "v2.json"), "--workflow", workflow, "--replace"
    )
    new = start_runs(daphne_server, workflow, 1)

    page = session(chromium, daphne_server, daphne_server.username, daphne_server.password)
    try:
        page.set_viewport_size({"width": width, "height": 900})
        open_workflow(page, workflow)
        section = page.locator("#runs-by-version")
        expect(section).to_be_visible()
        rows = section.locator("tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(0).locator("th")).to_contain_text("version 2")
        expect(rows.nth(0).locator("th")).to_contain_text("published")
        expect(rows.nth(1).locator("th")).to_contain_text("version 1")
        expect(rows.nth(1).locator("td").first).to_have_text("2")
        expect(rows.nth(0).locator(f'a[href="/runs/{new[0]}/"]')).to_have_count(1)
        for run_id in old:
            expect(rows.nth(1).locator(f'a[href="/runs/{run_id}/"]')).to_have_count(1)
        page_wider = page.evaluate(
            "() => document.documentElement.scrollWidth > window.innerWidth + 1"
        )
        table_wider = page.evaluate(
            "() => { const t = document.querySelector('#runs-by-version table');"
            " return t.scrollWidth > t.parentElement.clientWidth + 1 }"
        )
        OUTPUT.mkdir(exist_ok=True)
        section.screenshot(path=str(OUTPUT / f"admin-runs-by-version-{width}px.png"))
        assert not page_wider and not table_wider
        rows.nth(0).locator(f'a[href="/runs/{new[0]}/"]').click()
        expect(page.locator("#run-version-link")).to_have_text("version 2")
        assert page.page_errors == []
    finally:
        page.context.close()
