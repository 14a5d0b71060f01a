"""The engine is pure Python: importing and using it never pulls in Django or runs.models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[3]

SCRIPT = """
import json, os, sys
assert "DJANGO_SETTINGS_MODULE" not in os.environ
import contextadmin_sdk.engine as engine
from contextadmin_sdk.engine import (build_context, DerivedContextManager, RunState, replay,
resolve,
                         validate_condition, evaluate_condition, mongo_client)
config = open("contextadmin/demo/context_variables.json").read()
ctx = build_context(config, workflow_name="Generator", enterprise_id="acme", environ={})
event = {"type": "agent_text", "agent": "InterviewAgent", "text": "next"}
state = replay(config, ctx.values, [event])
assert evaluate_condition("${interview_complete}", state.context)
assert validate_condition("${interview_complete}", config) == []
mongo_client("mongodb://127.0.0.1:1").close()
leaked = sorted(m for m in sys.modules if m == "django" or m.startswith(("django.", "runs.models")))
print(json.dumps(leaked))
"""


def test_engine_imports_and_runs_without_django() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(PROJECT)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_engine_sources_never_mention_django() -> None:
    for path in sorted((PROJECT / "sdk" / "contextadmin_sdk").rglob("*.py")):
        source = path.read_text()
        assert "import django" not in source and "from django" not in source, path.name
        assert "runs.models" not in source, path.name
