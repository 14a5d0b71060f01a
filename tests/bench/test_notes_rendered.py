"""docs/benchmarks.md's findings are bench/notes.md as written: a section edited in the docs
alone would be lost at the next full run or ``--render`` (it was, for five sessions)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_published_findings_are_the_notes_the_bench_renders() -> None:
    notes = (ROOT / "bench" / "notes.md").read_text()
    published = (ROOT / "docs" / "benchmarks.md").read_text()
    assert notes.startswith("## ")
    assert published.endswith(notes), "edit bench/notes.md, then render (python -m bench --render)"
