"""A runtime installs the SDK, not the server: in a clean virtualenv holding only
``./sdk[ag2]`` (where ``import django`` fails), docs/ag2.md's AG2 1.x quick start runs
against a live server and its run ends completed there, recorded as an AG2 1.x run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from contextadmin_sdk.client import RunReporter

from devservers.processes import PROJECT
from tests.sdk.integrations.test_ag2_docs import python_blocks

pytestmark = pytest.mark.slow


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)


@pytest.fixture(scope="module")
def sdk_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the SDK and AG2 1.x installed from this checkout, nothing else."""
    root = tmp_path_factory.mktemp("sdk-venv")
    source = shutil.copytree(PROJECT / "sdk", root / "sdk")  # a build writes into its source
    venv = root / "venv"
    created = _run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    assert created.returncode == 0, created.stderr
    installed = _run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{source}[ag2]"],
        timeout=600,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


def test_the_sdk_installs_without_the_server(sdk_venv: Path) -> None:
    python = str(sdk_venv / "bin" / "python")
    clean_env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")
    }
    for missing in ("django", "channels", "daphne", "runs", "contextadmin"):
        probe = _run([python, "-c", f"import {missing}"], cwd="/", env=clean_env, timeout=60)
        assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr, missing
    present = _run(
        [python, "-c", "import contextadmin_sdk, ag2; print(contextadmin_sdk.__version__)"],
        cwd="/", env=clean_env, timeout=60,
    )
    assert present.returncode == 0, present.stderr
    assert present.stdout.strip() == __import__("contextadmin_sdk").__version__


def test_the_ag2_quick_start_runs_in_the_sdk_alone_against_a_live_server(
    sdk_venv: Path, site: Any, tmp_path: Path
) -> None:
    server, token = site
    quick_start = python_blocks()[0]  # docs/ag2.md's first block: AG2 1.x
    assert "contextadmin_sdk.integrations.ag2" in quick_start
    script = tmp_path / "quick_start.py"
    script.write_text(quick_start)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    env.update(CONTEXTADMIN_URL=server.url, CONTEXTADMIN_TOKEN=token)
    for name in ("ENVIRONMENT", "CONTEXT_AWARE", "MONETIZATION_ENABLED", "MONGODB_URI"):
        env.pop(name, None)
    result = _run(
        [str(sdk_venv / "bin" / "python"), str(script)], cwd=tmp_path, env=env, timeout=180
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = result.stdout.split()[0]
    state = RunReporter(server.url, token).fetch_state(run_id)
    assert state["state"]["execution"]["status"] == "completed"
    assert state["runtime"]["framework"] == "ag2"
    assert state["runtime"]["sdk"] == __import__("contextadmin_sdk").__version__
    assert state["state"]["context"]["interview_complete"] is True
