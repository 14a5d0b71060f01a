"""docs/ag2.md's examples run, against a live server, so they cannot rot: the AG2 1.x quick
start and the Classic one, each session checked after its block."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devservers.processes import PROJECT

DOC = PROJECT / "docs" / "ag2.md"


def run_in_thread(block: str, index: int, namespace: dict[str, object]) -> None:
    """Execute one of the document's blocks in ``namespace``, on a thread of its own."""
    code = compile(block, f"{DOC}:block{index}", "exec")
    with ThreadPoolExecutor(1) as pool:
        pool.submit(exec, code, namespace).result()


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.DOTALL | re.MULTILINE)


@pytest.mark.slow
def test_ag2_doc_examples_run_from_any_directory_after_an_edit(
    site, monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path
) -> None:
    """The quick start takes the published definitions from the server: it runs outside the
    repository, and a change an operator publishes shows in its next run."""
    from contextadmin_sdk.client import RunReporter

    from runs.demo_chats.autogen_chat import DEMO_CONFIG, DEMO_WORKFLOW

    server, token = site
    edited = json.loads(DEMO_CONFIG.read_text())
    edited["context_variables"]["declarative_variables"][1]["value"] = 40  # max_items 25 -> 40
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    server.manage("import_context", str(tmp_path / "edited.json"), "--workflow", DEMO_WORKFLOW,
                  "--replace")
    monkeypatch.chdir(tmp_path)  # not the repository: no file of the workflow here
    monkeypatch.setenv("CONTEXTADMIN_URL", server.url)
    monkeypatch.setenv("CONTEXTADMIN_TOKEN", token)
    for name in ("ENVIRONMENT", "CONTEXT_AWARE", "MONETIZATION_ENABLED", "MONGODB_URI"):
        monkeypatch.delenv(name, raising=False)
    blocks = python_blocks()
    assert len(blocks) >= 4
    namespace: dict[str, object] = {"__name__": "ag2_doc"}
    sessions = []
    try:
        for index, block in enumerate(blocks):
            # in a thread: the 1.x block calls asyncio.run, and the session's sync Playwright
            # may hold the main thread's loop
            run_in_thread(block, index, namespace)
            if namespace.get("session") is not None and namespace["session"] not in sessions:
                sessions.append(namespace["session"])
    finally:  # the shared server's workflow as shipped again, for the other tests
        server.manage("import_context", str(DEMO_CONFIG), "--workflow", DEMO_WORKFLOW,
                      "--replace")
    assert [type(s).__module__ for s in sessions] == [
        "contextadmin_sdk.integrations.ag2.session",  # the 1.x quick start comes first
        "contextadmin_sdk.integrations.autogen.session",
    ]
    for session, framework in zip(sessions, ("ag2", "autogen"), strict=True):
        reporter = session.reporter  # type: ignore[attr-defined]
        assert reporter.last_acked_seq == session.state.last_seq  # type: ignore[attr-defined]
        assert session.context["max_items"] == 40  # type: ignore[attr-defined]
        spool = tmp_path / "var" / "spool" / f"{session.run_id}.jsonl"  # type: ignore[attr-defined]
        assert not spool.exists()
        state = RunReporter(server.url, token).fetch_state(session.run_id)  # type: ignore[attr-defined]
        assert state["definitions"]["source"] == "version"  # pinned to the version it fetched
        assert state["state"]["context"]["max_items"] == 40
        assert state["state"]["execution"]["status"] == "completed"
        assert state["runtime"]["framework"] == framework
    assert capsys.readouterr().out.count("interview_complete") == 2
