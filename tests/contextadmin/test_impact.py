"""Impact analysis: recorded runs replayed under another version (pure, and the command)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from contextadmin_sdk.engine import format as fmt
from django.core.management import call_command
from django.core.management.base import CommandError

from contextadmin import impact, services
from contextadmin.impact import Difference, RecordedRun
from contextadmin.models import Workflow

DOCUMENT: dict[str, Any] = {
    "context_variables": {
        "environment_variables": [
            {
                "name": "beta",
                "type": "boolean",
                "source": {"type": "environment", "env_var": "BETA"},
            }
        ],
        "derived_variables": [
            {
                "name": "done",
                "type": "boolean",
                "triggers": [
                    {"type": "agent_text", "agent": "Writer", "match": {"equals": "DONE"}}
                ],
            },
            {
                "name": "reviewed",
                "type": "boolean",
                "triggers": [{"type": "agent_turn_count", "agent": "Reviewer", "count": 2}],
            },
        ],
    },
    "handoffs": [
        {"source_agent": "Writer", "target_agent": "Reviewer", "condition": "${done}"},
        {
            "source_agent": "Reviewer",
            "target_agent": "Publisher",
            "condition": "${reviewed} and ${beta}",
        },
    ],
}
EVENTS = [
    {"type": "agent_text", "agent": "Writer", "text": "draft"},
    {"type": "agent_text", "agent": "Writer", "text": "DONE"},
    {"type": "agent_text", "agent": "Reviewer", "text": "hmm"},
    {"type": "agent_text", "agent": "Reviewer", "text": "ok"},
    {"type": "agent_text", "agent": "Reviewer", "text": "ship"},
]


def config(document: dict[str, Any]) -> fmt.ContextVariablesFile:
    return fmt.parse_config(json.dumps(document)).config


def variant(**changes: Any) -> dict[str, Any]:
    document = json.loads(json.dumps(DOCUMENT))
    derived = document["context_variables"]["derived_variables"]
    if "count" in changes:
        derived[1]["triggers"][0]["count"] = changes["count"]
    if "equals" in changes:
        derived[0]["triggers"][0]["match"]["equals"] = changes["equals"]
    return document


RUN = RecordedRun("run-1", {"beta": True, "done": False, "reviewed": False}, EVENTS, version=1)


def test_the_same_version_changes_nothing() -> None:
    result = impact.run_impact(run=RUN, pinned=config(DOCUMENT), candidate=config(DOCUMENT))
    assert result.differences == [] and result.events == 5


def test_a_flag_flipping_later_moves_its_handoff_too() -> None:
    result = impact.run_impact(run=RUN, pinned=config(DOCUMENT), candidate=config(variant(count=3)))
    assert result.differences == [
        Difference("flip", "reviewed", 4, 5),
        Difference("handoff", "hand-off Reviewer → Publisher", 4, 5),
    ]
    assert [str(d) for d in result.differences] == [
        "reviewed flips at event 5 instead of 4",
        "hand-off Reviewer → Publisher holds at event 5 instead of 4",
    ]


def test_a_replay_logs_no_flip_as_if_it_happened_now(caplog: pytest.LogCaptureFixture) -> None:
    """A flip's log line says a flag flipped in a run now: impact_context's stderr and the
    server log (History's replay) must not fill with the replays' flips."""
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk"):
        result = impact.run_impact(
            run=RUN, pinned=config(DOCUMENT), candidate=config(variant(count=3))
        )
    assert result.differences  # both replays flipped their flags
    assert not [line for line in caplog.messages if "flipped" in line]


def test_a_flag_that_no_longer_flips() -> None:
    result = impact.run_impact(
        run=RUN, pinned=config(DOCUMENT), candidate=config(variant(equals="FINISHED"))
    )
    assert [str(d) for d in result.differences] == [
        "done no longer flips (was at event 2)",
        "hand-off Writer → Reviewer no longer holds (was at event 2)",
    ]


def test_replay_is_bounded_and_reports_progress() -> None:
    seen: list[int] = []
    runs = ((RecordedRun(f"r{i}", RUN.base_context, EVENTS), config(DOCUMENT)) for i in range(50))
    report = impact.impact_replay(
        runs=runs,
        candidate=config(variant(count=3)),
        limit=20,
        max_events=3,
        progress=lambda done, limit: seen.append(done),
    )
    assert report.replayed == 20 and seen == list(range(1, 21))
    assert all(run.truncated and run.events == 3 for run in report.runs)
    assert report.changed == []  # the difference lies after event 3
    assert report.runs_per_second > 0


@pytest.fixture
def recorded(db: None) -> Iterator[list[dict[str, Any]]]:
    """A workflow with a published version 1, a draft 2, and a registered run source."""
    services.workflow_import(name="Pipeline", data=json.dumps(DOCUMENT))
    calls: list[dict[str, Any]] = []

    def source(*, workflow_name: str, limit: int) -> Iterator[Any]:
        calls.append({"workflow_name": workflow_name, "limit": limit})
        for index in range(3):
            yield RecordedRun(f"run-{index}", RUN.base_context, EVENTS, version=1), config(DOCUMENT)

    saved = list(impact._SOURCES)
    impact._SOURCES[:] = [source]
    try:
        yield calls
    finally:
        impact._SOURCES[:] = saved


def test_command_exits_non_zero_when_a_run_would_change(
    recorded: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    services.workflow_import(name="Pipeline", data=json.dumps(variant(count=3)), replace=True)
    with pytest.raises(CommandError) as caught:
        call_command("impact_context", "Pipeline", "--version", "draft", "--runs", "5")
    assert caught.value.returncode == 3
    out = capsys.readouterr().out
    assert "run run-0 (pinned version 1):" in out
    assert "  reviewed flips at event 5 instead of 4" in out
    assert "3 runs replayed under version 2" in out and "3 would change" in out
    assert recorded == [{"workflow_name": "Pipeline", "limit": 5}]


def test_command_exits_zero_when_nothing_changes(
    recorded: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("impact_context", "Pipeline")
    assert "0 would change" in capsys.readouterr().out


def test_command_without_a_run_source(db: None) -> None:
    Workflow.objects.create(name="Lonely")
    saved = list(impact._SOURCES)
    impact._SOURCES[:] = []
    try:
        with pytest.raises(CommandError, match="no recorded runs to replay"):
            call_command("impact_context", "Lonely")
    finally:
        impact._SOURCES[:] = saved


def test_history_page_replays_recent_runs_on_request(
    recorded: list[dict[str, Any]], staff_client: Any
) -> None:
    from django.urls import reverse

    services.workflow_import(name="Pipeline", data=json.dumps(variant(count=3)), replace=True)
    workflow = Workflow.objects.get(name="Pipeline")
    url = reverse("admin:contextadmin_workflow_history", args=[workflow.pk])
    page = staff_client.get(url).content.decode()
    assert "Replay recent runs under version 2" in page and recorded == []
    page = staff_client.get(url + "?from=1&to=2&impact=1").content.decode()
    assert "Impact on recorded runs: 3 of 3 would change" in page
    assert "reviewed flips at event 5 instead of 4" in page
