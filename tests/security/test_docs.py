"""docs/reliability.md's "Hostile input and access" rows name tests that exist, and its limits
match the settings' defaults."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

DOC = Path(settings.BASE_DIR) / "docs" / "reliability.md"


def section() -> str:
    text = DOC.read_text()
    start = text.index("## Hostile input and access")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_every_row_names_a_test_that_exists():
    references = re.findall(r"`(tests/[^`:]+)::(\w+)`", section())
    assert len(references) > 40
    for path, name in references:
        source = (Path(settings.BASE_DIR) / path).read_text()
        assert re.search(rf"def {name}\(", source), f"{path}::{name}"


def test_documented_limits_are_the_defaults():
    text = section()
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 1_048_576 and "default 1 MiB" in text
    for name, shown in (
        ("API_MAX_EVENTS_PER_BATCH", "1,000"),
        ("API_MAX_RUNNING_RUNS_PER_TOKEN", "1,000"),
        ("API_MAX_SOCKETS_PER_TOKEN", "200"),
        ("API_RATE_LIMIT_PER_MINUTE", "60,000"),
    ):
        assert f"{int(shown.replace(',', '')):,}" == shown
        assert getattr(settings, name) == int(shown.replace(",", "")), name
        assert f"`{name}` (default {shown}" in text, name
    run_script = (Path(settings.BASE_DIR) / "scripts" / "run").read_text()
    assert "--websocket-max-message-size 1048576" in run_script
