"""docs/ag2.md's examples run, against a live server, so they cannot rot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from devservers.processes import PROJECT

DOC = PROJECT / "docs" / "ag2.md"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.DOTALL | re.MULTILINE)


@pytest.mark.slow
def test_ag2_doc_examples_run_from_any_directory_after_an_edit(
    site, monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path
) -> None:
    """The quick start takes the published definitions from the server: it runs outside the
    repository, and a change an operator publishes shows in its next run."""
    from runs.client import RunReporter
    from runs.integrations.autogen.demo import DEMO_CONFIG, DEMO_WORKFLOW

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
    assert len(blocks) >= 3
    namespace: dict[str, object] = {"__name__": "ag2_doc"}
    try:
        for index, block in enumerate(blocks):
            exec(compile(block, f"{DOC}:block{index}", "exec"), namespace)  # noqa: S102
    finally:  # the shared server's workflow as shipped again, for the other tests
        server.manage("import_context", str(DEMO_CONFIG), "--workflow", DEMO_WORKFLOW,
                      "--replace")
    session = namespace["session"]
    assert session.reporter.last_acked_seq == session.state.last_seq  # type: ignore[attr-defined]
    assert session.context["max_items"] == 40  # type: ignore[attr-defined]
    assert "interview_complete" in capsys.readouterr().out
    assert not (tmp_path / "var" / "spool" / f"{session.run_id}.jsonl").exists()  # type: ignore[attr-defined]
    state = RunReporter(server.url, token).fetch_state(session.run_id)  # type: ignore[attr-defined]
    assert state["definitions"]["source"] == "version"  # pinned to the version it fetched
    assert state["state"]["context"]["max_items"] == 40
    assert state["runtime"]["framework"] == "autogen"
