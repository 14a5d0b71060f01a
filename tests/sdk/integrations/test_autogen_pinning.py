"""Issue 20, item 6, as a new user tries it: publish a change to a constant, then run AG2
chats deployed with the old export, and the README's ``demo_ag2``. No run is refused, no event
is lost, each run is pinned to what it ran with and shown outdated (live Daphne, real AG2)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.integrations.autogen import attach

from runs.demo_chats.autogen_chat import (
    DEMO_CONFIG,
    DEMO_WORKFLOW,
    OPENING,
    demo_pattern,
)
from tests.support.live_server import LiveServer, live_server_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str, Path]]:
    """A Daphne of this module's own (it publishes), GeneratorChat at version 1 and the export
    a deployment pipeline shipped from it."""
    workdir = tmp_path_factory.mktemp("fleet")
    for server in live_server_run(workdir, username="fleet"):
        server.manage("import_context", str(DEMO_CONFIG), "--workflow", DEMO_WORKFLOW)
        token = server.manage("create_api_token", "fleet").stdout.strip()
        shipped = workdir / "context_variables.json"
        server.manage("export_context", DEMO_WORKFLOW, "-o", str(shipped))
        yield server, token, shipped


def publish_max_items(server: LiveServer, workdir: Path, value: int) -> int:
    """What an operator does in the admin: change the constant max_items, publish."""
    document = json.loads(DEMO_CONFIG.read_text())
    document["context_variables"]["declarative_variables"][1]["value"] = value
    path = workdir / f"max_items_{value}.json"
    path.write_text(json.dumps(document))
    done = server.manage("import_context", str(path), "--workflow", DEMO_WORKFLOW, "--replace")
    return int(done.stdout.rsplit("version ", 1)[1].split(",")[0])


def test_a_fleet_on_the_old_export_keeps_running_after_a_publish_and_loses_nothing(
    fleet: tuple[LiveServer, str, Path], tmp_path: Path
) -> None:
    server, token, shipped = fleet
    assert json.loads(shipped.read_text())["version"]["number"] == 1
    published = publish_max_items(server, tmp_path, 40)
    assert published == 2
    for _ in range(3):  # runtimes still on version 1's export keep starting runs
        pattern = demo_pattern()
        session = attach(
            pattern, shipped, workflow_name=DEMO_WORKFLOW, enterprise_id="acme", environ={},
            reporter=RunReporter(server.url, token), spool_dir=tmp_path,
        )
        assert session.reporter is not None and session.reporter.wait_started(10)
        with session:
            initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
        assert session.reporter.error is None
        assert session.reporter.last_acked_seq == session.state.last_seq  # none lost
        state = RunReporter(server.url, token).fetch_state(session.run_id)
        assert state["workflow_version"] == 1 and state["definitions"]["source"] == "version"
        assert state["state"]["context"]["max_items"] == 25  # what the chat ran with
        assert state["state"]["execution"]["status"] == "completed"
        assert state["runtime"]["framework"] == "autogen"
    assert not list(tmp_path.glob("*.jsonl"))  # every spool delivered and removed


def test_demo_ag2_after_an_edit_runs_the_published_version_and_links_an_existing_run(
    fleet: tuple[LiveServer, str, Path], tmp_path: Path
) -> None:
    server, token, _ = fleet
    published = publish_max_items(server, tmp_path, 33)
    done = server.manage(
        "demo_ag2", "--url", server.url, "--delay", "0", "--token", token
    )
    link = next(line for line in done.stdout.splitlines() if line.startswith("run "))
    run_id = link.split()[1].rstrip(":")
    state = RunReporter(server.url, token).fetch_state(run_id)  # the linked run exists
    assert state["workflow_version"] == published
    assert state["state"]["context"]["max_items"] == 33
    assert state["state"]["execution"]["status"] == "completed"


def test_demo_ag2_with_a_refused_token_prints_no_link(
    fleet: tuple[LiveServer, str, Path], tmp_path: Path
) -> None:
    server, _, _ = fleet
    with pytest.raises(subprocess.CalledProcessError) as caught:
        server.manage(
            "demo_ag2", "--url", server.url, "--delay", "0", "--token", "ca_00000000_wrong"
        )
    failed: Any = caught.value
    assert "/runs/" not in failed.stdout
    assert "401" in failed.stderr and "create_api_token" in failed.stderr
