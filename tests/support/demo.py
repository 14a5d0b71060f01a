"""The demo workflow, its MongoDB documents and its scripted run, as shipped in the project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parents[2] / "contextadmin" / "demo"


def demo_config() -> dict[str, Any]:
    """The Generator workflow of seed 000 (a fresh copy each call)."""
    config: dict[str, Any] = json.loads((DEMO / "context_variables.json").read_text())
    return config


def demo_events() -> list[dict[str, Any]]:
    """The scripted run: eight events that flip interview_complete at #5."""
    lines = (DEMO / "run_events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]
