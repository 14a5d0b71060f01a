"""A resume continues the run on the definitions the run is pinned to: a runtime redeployed with
other definitions (an edited export, a newer version) would route on rules the run page does not
show, so ``attach(..., run_id=...)`` refuses it, naming both digests, before the reporter takes
the run. The run's production export holds the same definitions and resumes. Real AG2 Classic,
against the live server and against a server that is away (the spool's start says)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.engine.format import config_digest, config_export_dict, parse_config
from contextadmin_sdk.integrations.autogen import attach

from devservers.processes import free_port
from runs.demo_chats.autogen_chat import DEMO_CONFIG, DEMO_WORKFLOW, OPENING, demo_pattern

from .chats import attach_demo_chat
from .live import api
from .test_resume_log import exploding_pattern

pytestmark = pytest.mark.slow

SHIPPED = json.loads(DEMO_CONFIG.read_text())


def edited() -> dict[str, Any]:
    """The shipped export with a description changed by hand: other definitions."""
    document = copy.deepcopy(SHIPPED)
    document.pop("version", None)
    document["context_variables"]["derived_variables"][0]["description"] = "edited after the run"
    return document


def production() -> dict[str, Any]:
    return config_export_dict(parse_config(SHIPPED).config, production=True)


def crashed(reporter: RunReporter, spool_dir: Path) -> str:
    """A Classic chat that dies after interview_complete flipped; its run id."""
    pattern = exploding_pattern()
    session = attach_demo_chat(pattern, reporter=reporter, spool_dir=spool_dir, flush_timeout=1)
    with pytest.raises(RuntimeError, match="provider is down"), session:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
    assert session.run_id is not None
    return session.run_id


def resume(config: Any, *, reporter: RunReporter, spool_dir: Path, run_id: str) -> Any:
    """``attach(..., run_id=...)`` of the Classic demo chat, with ``config`` as the runtime's."""
    return attach(
        demo_pattern(),
        config,
        workflow_name=DEMO_WORKFLOW,
        enterprise_id="acme",
        environ={},
        reporter=reporter,
        spool_dir=spool_dir,
        run_id=run_id,
        flush_timeout=1,
    )


def quick(url: str, token: str) -> RunReporter:
    return RunReporter(url, token, backoff=0.01, transport="http")


def test_a_resume_with_other_definitions_is_refused_and_the_production_export_resumes(
    site: Any, tmp_path: Path
) -> None:
    server, token = site
    run_id = crashed(RunReporter(server.url, token), tmp_path)
    pinned = api(server.url, token, f"/api/runs/{run_id}/state/")

    refused_reporter = quick(server.url, token)
    with pytest.raises(ValueError) as refused:
        resume(edited(), reporter=refused_reporter, spool_dir=tmp_path, run_id=run_id)
    held = config_digest(parse_config(edited()).config)
    assert str(refused.value) == (
        f"run {run_id} is pinned to definitions {pinned['definitions']['digest']} (version "
        f"{pinned['workflow_version']}), but this runtime holds {held}: resume it with the "
        "definitions it started with (a production export of them will do), or start a new "
        "run with these"
    )
    assert refused_reporter.run_id is None  # refused before the reporter took the run

    session = resume(
        production(), reporter=quick(server.url, token), spool_dir=tmp_path, run_id=run_id
    )
    assert session.context["interview_complete"] is True  # rebuilt from the server's state
    session.reporter.close(5)
    after = api(server.url, token, f"/api/runs/{run_id}/state/")
    assert after["definitions"] == pinned["definitions"]  # still pinned to what it started with


def test_with_the_server_away_the_spooled_start_says_what_the_run_is_pinned_to(
    tmp_path: Path,
) -> None:
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens: the spool has the start
    run_id = crashed(quick(down, "ca_test"), tmp_path)
    with pytest.raises(ValueError, match=f"run {run_id} is pinned to definitions sha256:"):
        resume(edited(), reporter=quick(down, "ca_test"), spool_dir=tmp_path, run_id=run_id)
    # its own definitions resume
    session = resume(
        DEMO_CONFIG, reporter=quick(down, "ca_test"), spool_dir=tmp_path, run_id=run_id
    )
    assert session.context["interview_complete"] is True
    session.reporter.close(0)
