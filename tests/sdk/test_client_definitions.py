"""What a runtime says it runs with, and the published definitions fetched with ETag caching
(``contextadmin_sdk.client.definitions``), against a live Daphne; and a refused run start in the
fake
server's cases a real one cannot produce."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contextadmin_sdk.client import ReportError, RunReporter
from contextadmin_sdk.client import definitions as client_definitions
from contextadmin_sdk.client.definitions import (
    DefinitionsError,
    definitions_payload,
    runtime_info,
    sdk_version,
)
from contextadmin_sdk.engine import build_context
from contextadmin_sdk.engine import format as fmt

from devservers.processes import free_port
from tests.sdk.integrations.fake_server import FakeRunServer
from tests.support.demo import DEMO
from tests.support.live_server import LiveServer, live_server_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    """A Daphne of this module's own (it publishes versions), with Generator and a token."""
    workdir = tmp_path_factory.mktemp("pinning")
    for server in live_server_run(workdir, username="pin"):
        server.manage("import_context", str(DEMO / "context_variables.json"), "--workflow",
                      "Generator")
        token = server.manage("create_api_token", "pinning").stdout.strip()
        yield server, token


@pytest.fixture(scope="module")
def two_workflows(own_server: tuple[LiveServer, str]) -> tuple[LiveServer, str]:
    """The module's server with a second workflow, GeneratorChat (the AG2 demo's)."""
    server, token = own_server
    server.manage(
        "import_context", str(DEMO / "ag2_context_variables.json"), "--workflow", "GeneratorChat"
    )
    return server, token


@pytest.fixture(autouse=True)
def fresh_memory_cache() -> None:
    client_definitions._memory.clear()


def publish(server: LiveServer, tmp_path: Path, *, max_items: int) -> None:
    document = json.loads((DEMO / "context_variables.json").read_text())
    document["context_variables"]["declarative_variables"][1]["value"] = max_items
    path = tmp_path / f"max_items_{max_items}.json"
    path.write_text(json.dumps(document))
    server.manage("import_context", str(path), "--workflow", "Generator", "--replace")


def test_definitions_are_fetched_once_then_revalidated_with_their_etag(
    own_server: tuple[LiveServer, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, token = own_server
    sent: list[tuple[str | None, int]] = []
    real_urlopen = client_definitions.urllib.request.urlopen

    def recording_urlopen(request: Any, timeout: float) -> Any:
        try:
            response = real_urlopen(request, timeout=timeout)
        except client_definitions.urllib.error.HTTPError as exc:
            sent.append((request.get_header("If-none-match"), exc.code))
            raise
        sent.append((request.get_header("If-none-match"), response.status))
        return response

    monkeypatch.setattr(client_definitions.urllib.request, "urlopen", recording_urlopen)
    reporter = RunReporter(server.url, token)
    first = reporter.definitions("Generator", cache_dir=tmp_path)
    assert first.version is not None and first.version.digest == fmt.config_digest(first)
    again = reporter.definitions("Generator", cache_dir=tmp_path)
    assert again == first
    assert sent[0] == (None, 200) and sent[1][1] == 304 and sent[1][0]
    # another process: the disk cache's ETag, still a 304
    client_definitions._memory.clear()
    assert reporter.definitions("Generator", cache_dir=tmp_path) == first
    assert sent[2][1] == 304
    publish(server, tmp_path, max_items=41)  # an edit in the admin: the next fetch has it
    edited = reporter.definitions("Generator", cache_dir=tmp_path)
    assert sent[3][1] == 200
    assert edited.version is not None and first.version is not None
    assert edited.version.number == first.version.number + 1
    values = {v.name: v.value for v in edited.context_variables.declarative_variables}
    assert values["max_items"] == 41


def test_a_server_down_falls_back_to_the_cached_copy_and_without_one_says_so(
    own_server: tuple[LiveServer, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, token = own_server
    cached = RunReporter(server.url, token).definitions("Generator", cache_dir=tmp_path)
    client_definitions._memory.clear()
    down = f"http://127.0.0.1:{free_port()}"
    # the same cache files, as a runtime keeps them across a restart, for a server now down
    up = client_definitions._cache_path(tmp_path, (server.url, "Generator", "development",
                                                   "published"))
    gone = client_definitions._cache_path(tmp_path, (down, "Generator", "development",
                                                     "published"))
    assert up is not None and gone is not None
    up.rename(gone)
    up.with_suffix(".etag").rename(gone.with_suffix(".etag"))
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client.definitions"):
        assert RunReporter(down, token).definitions("Generator", cache_dir=tmp_path) == cached
    assert "using the cached copy" in caplog.text
    with pytest.raises(DefinitionsError, match="none are cached: is the server running"):
        RunReporter(down, token).definitions("Generator")


@pytest.mark.parametrize(
    ("token", "workflow", "version", "says"),
    [
        ("ca_00000000_wrong", "Generator", None, "create_api_token"),
        (None, "NoSuchWorkflow", None, "create or import the workflow NoSuchWorkflow"),
        # the workflow exists: the fix is about the version, not about creating it
        (None, "Generator", 9999, "has no version 9999; fix: ask for a version Generator has"),
    ],
)
def test_a_refused_fetch_names_the_cause_and_the_fix(
    own_server: tuple[LiveServer, str],
    token: str | None,
    workflow: str,
    version: int | None,
    says: str,
) -> None:
    server, good = own_server
    with pytest.raises(DefinitionsError, match=says) as caught:
        RunReporter(server.url, token or good).definitions(workflow, version=version)
    assert caught.value.status in (401, 404)
    if version is not None:
        assert "create or import" not in str(caught.value)


def test_a_runtime_says_what_it_runs_with() -> None:
    document = json.loads((DEMO / "context_variables.json").read_text())
    stale = {"number": 3, "digest": "sha256:" + "0" * 64}
    config = fmt.parse_config({**document, "version": stale}).config
    payload = definitions_payload(config)
    # the digest is computed from the definitions, never copied: a local edit shows
    assert payload["version"] == {"number": 3, "digest": fmt.config_digest(config)}
    assert {k: v for k, v in payload.items() if k != "version"} == fmt.config_export_dict(config)
    assert runtime_info(framework="ag2", version="1.2.1") == {
        "framework": "ag2", "version": "1.2.1", "sdk": sdk_version()
    }


def test_a_runtime_on_the_old_export_keeps_starting_runs_after_a_publish(
    own_server: tuple[LiveServer, str], tmp_path: Path
) -> None:
    """Blocking and background reporters alike: runs pinned to the export they ran with,
    every event stored, none refused."""
    server, token = own_server
    old = RunReporter(server.url, token).definitions("Generator")
    assert old.version is not None
    context = dict(build_context(old, workflow_name="Generator", enterprise_id="acme",
                                 environ={}).values)
    publish(server, tmp_path, max_items=77)
    events = [json.loads(line) for line in (DEMO / "run_events.jsonl").read_text().splitlines()
              if line.strip()]
    for background in (False, True, True):
        reporter = RunReporter(server.url, token, background=background)
        run_id = reporter.start(workflow="Generator", enterprise_id="acme", context=context,
                                definitions=old, runtime=runtime_info(framework="ag2",
                                                                     version="1.2.1"))
        for event in events:
            reporter.event(**event)
        assert reporter.close(10) is True
        state = reporter.fetch_state(run_id)
        assert state["seq"] == len(events)
        assert state["workflow_version"] == old.version.number
        assert state["state"]["context"]["max_items"] == context["max_items"] != 77
        assert state["runtime"]["framework"] == "ag2"


def test_a_refused_start_keeps_the_events_and_retries_once_fixed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 409 the real server gives only in a race (a taken run id): the fake one scripts it."""
    fake = FakeRunServer().start()
    try:
        fake.status = 409
        reporter = RunReporter(fake.url, "ca_x", background=True, backoff=0.02)
        with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
            reporter.start(workflow="W", enterprise_id="e")
            assert reporter.wait_started(5) is False
            for index in range(30):
                reporter.event("agent_text", agent="a", text=str(index))
            reporter.event("run_status", status="completed")
            assert reporter.close(1) is False
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and "409" in errors[0] and "retry_start()" in errors[0]
        assert reporter.run_id not in fake.runs
        fake.status = None  # the operator fixed it
        reporter.retry_start()
        assert reporter.wait_started(5) is True
        assert reporter.close(5) is True
        assert [e["seq"] for e in fake.events[reporter.run_id]] == list(range(1, 32))
    finally:
        fake.stop()


@pytest.mark.parametrize("background", [False, True])
def test_definitions_fetched_for_another_workflow_never_start_its_run(
    two_workflows: tuple[LiveServer, str], background: bool
) -> None:
    """The reporter knows which workflow it fetched definitions for: starting a run of another
    workflow with them is a ValueError naming both, and nothing reaches the server."""
    server, token = two_workflows
    reporter = RunReporter(server.url, token, background=background)
    chat = reporter.definitions("GeneratorChat")
    run_id = f"sdk-mismatch-{background}"
    with pytest.raises(ValueError) as refused:
        reporter.start(workflow="Generator", enterprise_id="acme", run_id=run_id, definitions=chat)
    assert str(refused.value) == (
        "definitions: fetched for workflow 'GeneratorChat' "
        "(RunReporter.definitions('GeneratorChat')), but the run is for workflow 'Generator': "
        "pass the definitions of 'Generator', or start the run as 'GeneratorChat'"
    )
    assert reporter.run_id is None
    with pytest.raises(ReportError, match="404"):
        RunReporter(server.url, token).fetch_state(run_id)
    # Its own workflow's run takes them.
    started = reporter.start(
        workflow="GeneratorChat", enterprise_id="acme", run_id=run_id, definitions=chat
    )
    assert started == run_id
    assert reporter.close(10) is True  # a run with no event yet: close waits for its start
    assert reporter.fetch_state(run_id)["workflow_version"] == 1


def test_another_workflows_exported_file_is_refused_by_the_server(
    two_workflows: tuple[LiveServer, str], tmp_path: Path
) -> None:
    """A file names no workflow, so the SDK sends it; the server knows it by its digest."""
    server, token = two_workflows
    shipped = tmp_path / "context_variables.json"
    server.manage("export_context", "GeneratorChat", "-o", str(shipped))
    document = json.loads(shipped.read_text())
    with pytest.raises(ReportError) as refused:
        RunReporter(server.url, token).start(
            workflow="Generator", enterprise_id="acme", definitions=document
        )
    assert refused.value.status == 400
    assert "definitions: are version 1 of workflow 'GeneratorChat' (sha256:" in str(
        refused.value
    )
    assert "but the run is for workflow 'Generator'" in str(refused.value)


def test_a_background_start_refused_for_its_definitions_does_not_advise_a_retry(
    two_workflows: tuple[LiveServer, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """retry_start() would send the same definitions, so the error says to start a new run."""
    server, token = two_workflows
    shipped = tmp_path / "context_variables.json"
    server.manage("export_context", "GeneratorChat", "-o", str(shipped))
    reporter = RunReporter(server.url, token)
    reporter.use_background()
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        reporter.start(
            workflow="Generator",
            enterprise_id="acme",
            definitions=json.loads(shipped.read_text()),
        )
        assert reporter.wait_started(10) is False
    assert reporter.error is not None
    assert "definitions: are version 1 of workflow 'GeneratorChat'" in reporter.error
    assert "cannot succeed as sent" in reporter.error
    assert "start a new run with this workflow's definitions" in reporter.error
    assert "call reporter.retry_start()" not in reporter.error
    reporter.close(1)
