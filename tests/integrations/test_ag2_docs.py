"""docs/ag2.md's examples run, against a live server, so they cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.processes import PROJECT

DOC = PROJECT / "docs" / "ag2.md"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.DOTALL | re.MULTILINE)


@pytest.mark.slow
def test_ag2_doc_examples_run(site, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server, token = site
    monkeypatch.chdir(PROJECT)
    monkeypatch.setenv("CONTEXTADMIN_URL", server.url)
    monkeypatch.setenv("CONTEXTADMIN_TOKEN", token)
    for name in ("ENVIRONMENT", "CONTEXT_AWARE", "MONETIZATION_ENABLED", "MONGODB_URI"):
        monkeypatch.delenv(name, raising=False)
    blocks = python_blocks()
    assert len(blocks) >= 3
    namespace: dict[str, object] = {"__name__": "ag2_doc"}
    for index, block in enumerate(blocks):
        exec(compile(block, f"{DOC}:block{index}", "exec"), namespace)  # noqa: S102
    session = namespace["session"]
    assert session.reporter.last_acked_seq == session.state.last_seq  # type: ignore[attr-defined]
    assert "interview_complete" in capsys.readouterr().out
    assert not Path(PROJECT / "var" / "spool" / f"{session.run_id}.jsonl").exists()  # type: ignore[attr-defined]
