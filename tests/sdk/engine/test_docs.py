"""docs/engine.md's examples run, so they cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[3]
DOC = PROJECT / "docs" / "engine.md"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.DOTALL | re.MULTILINE)


def test_the_doc_has_examples() -> None:
    assert len(python_blocks()) >= 2


def test_engine_doc_examples_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(PROJECT)
    monkeypatch.delenv("MONGODB_URI", raising=False)
    namespace: dict[str, object] = {"__name__": "engine_doc"}
    for index, block in enumerate(python_blocks()):
        exec(compile(block, f"{DOC}:block{index}", "exec"), namespace)  # noqa: S102
    assert "flipped" in capsys.readouterr().out
