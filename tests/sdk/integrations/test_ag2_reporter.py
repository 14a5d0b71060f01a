"""A server that is down, slow or refusing never raises into an AG2 1.x workflow and never
slows it: the reporter's queue and spool take the events (tests/sdk/integrations/fake_server.py)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from contextadmin_sdk.client import RunReporter

from devservers.processes import free_port
from runs.demo_chats.ag2_workflow import demo_workflow, run_demo

from .fake_server import FakeRunServer
from .workflows import attach_demo


async def _timed_demo(reporter: RunReporter | None, **options: object) -> tuple[float, object]:
    demo = await demo_workflow()
    session = attach_demo(
        demo,
        reporter=reporter,
        **options,  # type: ignore[arg-type]
    )
    session.__enter__()
    began = time.perf_counter()
    reason = await run_demo(demo, session)
    spent = time.perf_counter() - began
    assert reason == "reviewed"
    await demo.hub.close()
    return spent, session


async def test_server_down_then_slow_the_workflow_is_not_slowed_and_nothing_is_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    baseline, _ = await _timed_demo(None)
    baseline = min(baseline, (await _timed_demo(None))[0])

    down_url = f"http://127.0.0.1:{free_port()}"
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        spent, session = await _timed_demo(
            RunReporter(down_url, "ca_x_token"), spool_dir=tmp_path, flush_timeout=0.5
        )
        session.__exit__(None, None, None)  # type: ignore[attr-defined]
    assert spent < baseline + 0.25
    assert session.state.get("execution.status") == "completed"  # type: ignore[attr-defined]
    spool = tmp_path / f"{session.run_id}.jsonl"  # type: ignore[attr-defined]
    seqs = [json.loads(line).get("event", {}).get("seq") for line in spool.read_text().splitlines()]
    assert seqs[-1] == session.state.last_seq == 14  # type: ignore[attr-defined]

    slow = FakeRunServer(delay=0.5).start()
    try:
        spent, session = await _timed_demo(
            RunReporter(slow.url, "ca_x_token"), spool_dir=tmp_path, flush_timeout=30
        )
        assert spent < baseline + 0.25
        session.__exit__(None, None, None)  # type: ignore[attr-defined]
        assert slow.seqs(session.run_id) == list(range(1, 15))  # type: ignore[attr-defined]
        runtime = slow.runs[session.run_id].get("runtime")  # type: ignore[attr-defined]
        if runtime is not None:  # RunReporter.start(runtime=...) on this branch
            assert runtime["framework"] == "ag2" and runtime["version"].startswith("1.2.")
    finally:
        slow.stop()


async def test_a_refusing_server_never_hurts_the_workflow(caplog: pytest.LogCaptureFixture) -> None:
    refusing = FakeRunServer().start()
    refusing.status = 401
    try:
        with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
            _, session = await _timed_demo(RunReporter(refusing.url, "ca_x_token"))
            session.__exit__(None, None, None)  # type: ignore[attr-defined]
    finally:
        refusing.stop()
    assert session.context["handoffs_reviewed"] is True  # type: ignore[attr-defined]
    assert "401" in (session.reporter.error or "")  # type: ignore[attr-defined]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "create_api_token" in errors[0]  # the cause and the fix, once
