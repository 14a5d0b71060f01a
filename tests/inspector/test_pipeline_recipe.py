"""docs/deploy.md's polling recipe, run as written (sh + curl) against a real Daphne: it deploys
version 1, then answers 304 and keeps the file until version 2 is published, then deploys it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from devservers.processes import PROJECT, manage
from tests.support.demo import demo_config

RECIPE = re.compile(r"```sh\n(#!/bin/sh\n# poll-context\.sh.*?)```", re.DOTALL)


def recipe() -> str:
    found = RECIPE.search((PROJECT / "docs" / "deploy.md").read_text())
    assert found, "docs/deploy.md lost its poll-context.sh recipe"
    return found.group(1)


@pytest.mark.skipif(shutil.which("curl") is None, reason="the recipe uses curl")
def test_the_documented_poll_deploys_only_newly_published_versions(live, tmp_path: Path) -> None:
    workflow = f"Polled{uuid.uuid4().hex[:6]}"  # its own workflow: the server is shared
    script = recipe()
    assert "workflow=Generator\n" in script
    (tmp_path / "poll-context.sh").write_text(
        script.replace("workflow=Generator\n", f"workflow={workflow}\n")
    )
    document = tmp_path / "definitions.json"
    document.write_text(json.dumps(demo_config()))
    manage(live.env, "import_context", str(document), "--workflow", workflow)  # version 1

    def poll() -> str:
        done = subprocess.run(
            ["sh", "poll-context.sh"],
            cwd=tmp_path,
            env={
                "PATH": "/usr/bin:/bin",
                "CONTEXTADMIN_URL": live.url,
                "CONTEXTADMIN_TOKEN": live.secret,
            },
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip()

    deployed = tmp_path / "context_variables.json"
    assert poll() == f"{workflow}: deploying version 1"
    first = deployed.read_bytes()
    assert json.loads(first)["context_variables"]["environment_variables"] == []  # production
    assert poll() == f"{workflow}: no new version published"
    assert deployed.read_bytes() == first  # a 304 keeps the deployed file
    assert not (tmp_path / "cv.json.new").exists()

    changed = demo_config()
    changed["context_variables"]["declarative_variables"][1]["value"] = 30
    document.write_text(json.dumps(changed))
    manage(live.env, "import_context", str(document), "--workflow", workflow, "--replace")
    assert poll() == f"{workflow}: deploying version 2"
    assert (
        json.loads(deployed.read_bytes())["context_variables"]["declarative_variables"][1]["value"]
        == 30
    )
    assert poll() == f"{workflow}: no new version published"
