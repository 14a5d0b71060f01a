"""docs/ag2.md's examples run, against a live server, so they cannot rot: the AG2 1.x quick
start and the Classic one, each session checked after its block."""

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
    assert len(blocks) >= 4
    namespace: dict[str, object] = {"__name__": "ag2_doc"}
    sessions = []
    for index, block in enumerate(blocks):
        exec(compile(block, f"{DOC}:block{index}", "exec"), namespace)  # noqa: S102
        if namespace.get("session") is not None and namespace["session"] not in sessions:
            sessions.append(namespace["session"])
    assert [type(s).__module__ for s in sessions] == [
        "runs.integrations.ag2.session",  # the 1.x quick start comes first
        "runs.integrations.autogen.session",
    ]
    for session in sessions:
        reporter = session.reporter  # type: ignore[attr-defined]
        assert reporter.last_acked_seq == session.state.last_seq  # type: ignore[attr-defined]
        assert session.state.get("execution.status") == "completed"  # type: ignore[attr-defined]
        spool = Path(PROJECT / "var" / "spool" / f"{session.run_id}.jsonl")  # type: ignore[attr-defined]
        assert not spool.exists()
    assert capsys.readouterr().out.count("interview_complete") == 2
