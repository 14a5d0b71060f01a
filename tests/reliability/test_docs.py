"""docs/reliability.md's "Faults" rows name tests that exist, and every fault test has a row."""

from __future__ import annotations

import re
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
DOC = PROJECT / "docs" / "reliability.md"


def faults_section() -> str:
    text = DOC.read_text()
    start = text.index("## Faults")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_every_fault_row_names_a_test_that_exists():
    references = re.findall(r"`(tests/[^`:]+)::(\w+)`", faults_section())
    assert references
    for path, name in references:
        source = (PROJECT / path).read_text()
        assert re.search(rf"def {name}\(", source), f"{path}::{name}"


def test_every_fault_test_has_a_row():
    named = {name for _, name in re.findall(r"`(tests/[^`:]+)::(\w+)`", faults_section())}
    here = Path(__file__).parent
    for module in sorted(here.glob("test_*.py")):
        if module.name == Path(__file__).name:
            continue
        for name in re.findall(r"^(?:async )?def (test_\w+)\(", module.read_text(), re.MULTILINE):
            assert name in named, f"{module.name}::{name} has no row in docs/reliability.md"
