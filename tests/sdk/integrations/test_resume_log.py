"""A resumed run (``attach(..., run_id=...)``) rebuilds its state from the spool without logging
the flips the runtime before it made as if they happened now: one line says where it resumed,
and only the flips after the resume are logged as flips. In process and cheap: the server is
never reachable, so the first chat's every event stays in its spool, and the resume rebuilds
the run from it alone (docs/ag2.md "Resume after a crash")."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from autogen.agentchat import initiate_group_chat
from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.integrations.autogen import attach

from devservers.processes import free_port
from runs.demo_chats.autogen_chat import DEMO_CONFIG, DEMO_WORKFLOW, OPENING, demo_pattern

from .chats import attach_demo_chat


def exploding_pattern() -> Any:
    """The demo chat whose ContextVariablesAgent's turn raises: the runtime stops after
    ``interview_complete`` flipped, before ``context_saved``."""
    pattern = demo_pattern()

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the LLM provider is down")

    pattern.agents[1].register_reply([object, None], explode)
    return pattern


def reporter(url: str) -> RunReporter:
    """A reporter to a server that is away: a resume asks twice, quickly, then uses the spool."""
    return RunReporter(url, "ca_test", backoff=0.01, transport="http")


def said(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_a_resume_logs_one_line_and_only_the_flips_made_after_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens: the spool keeps every event
    pattern = exploding_pattern()
    first = attach_demo_chat(
        pattern, reporter=reporter(down), spool_dir=tmp_path, flush_timeout=0.1
    )
    with (
        caplog.at_level(logging.INFO, logger="contextadmin_sdk"),
        pytest.raises(RuntimeError, match="provider is down"),
        first,
    ):
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)
    assert [line.split(" flipped")[0] for line in said(caplog, "flipped")] == [
        "derived interview_complete"
    ]
    stopped_at = first.state.last_seq
    caplog.clear()

    pattern = demo_pattern()
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk"):
        session = attach_demo_chat(
            pattern,
            reporter=reporter(down),
            spool_dir=tmp_path,
            run_id=first.run_id,
            flush_timeout=0.1,
        )
        assert session.context["interview_complete"] is True  # rebuilt from the spool
        # The rebuild is silent: one summary line, no flip of the runtime before repeated.
        assert said(caplog, "flipped") == []
        assert said(caplog, "resumed run") == [
            f"resumed run {first.run_id} at seq {stopped_at} ({stopped_at} spooled events not "
            "yet on the server) with flags interview_complete set"
        ]
        caplog.clear()
        with session:
            initiate_group_chat(
                pattern=pattern, messages=session.completed_overview(), max_rounds=30
            )
    # After the resume, each new flip is logged once, as it happens.
    assert [line.split(" flipped")[0] for line in said(caplog, "flipped")] == [
        "derived context_saved",
        "derived handoffs_reviewed",
    ]
    # Nothing the runtime before observed is reported again: one spool record per seq, the
    # resume's run_status and the new events after the dead runtime's.
    seqs = [
        json.loads(line)["event"]["seq"]
        for line in (tmp_path / f"{first.run_id}.jsonl").read_text().splitlines()
        if '"event"' in line[:12]
    ]
    assert seqs == list(range(1, session.state.last_seq + 1))
    assert session.events[stopped_at] == {
        "type": "run_status",
        "status": "running",
        "seq": stopped_at + 1,
    }


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"enterprise_id": "globex"}, "enterprise_id='globex'"),
        ({"workflow_name": "GeneratorChatCopy"}, "workflow_name='GeneratorChatCopy'"),
    ],
)
def test_a_resume_of_another_workflows_or_enterprises_run_is_refused(
    tmp_path: Path, options: dict[str, Any], named: str
) -> None:
    """A resume continues the run it names: given another workflow or enterprise, it would
    route on rules the run does not have, so it is refused, naming the run's own."""
    down = f"http://127.0.0.1:{free_port()}"
    pattern = exploding_pattern()
    first = attach_demo_chat(
        pattern, reporter=reporter(down), spool_dir=tmp_path, flush_timeout=0.1
    )
    with pytest.raises(RuntimeError, match="provider is down"), first:
        initiate_group_chat(pattern=pattern, messages=OPENING, max_rounds=30)

    second = reporter(down)
    with pytest.raises(ValueError) as refused:
        attach(
            demo_pattern(),
            DEMO_CONFIG,
            **{"workflow_name": DEMO_WORKFLOW, "enterprise_id": "acme", **options},
            reporter=second,
            spool_dir=tmp_path,
            run_id=first.run_id,
            flush_timeout=0.1,
            environ={},
        )
    message = str(refused.value)
    assert f"run {first.run_id} is workflow 'GeneratorChat' for enterprise 'acme'" in message
    assert named in message
    assert second.run_id is None  # refused before the reporter took the run or sent anything
