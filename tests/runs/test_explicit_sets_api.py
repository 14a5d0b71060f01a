"""Over HTTP: a derived flag set explicitly (a flip whose cause names the tool), warning events
(stored, counted, never a secret), and the context_set the server still refuses (400 naming the
field, nothing stored): the adapters, not the server, turn a refused change into a warning."""

from __future__ import annotations

from typing import Any

import pytest

from runs.models import Flip, Run, RunEvent
from tests.runs.conftest import Api

pytestmark = pytest.mark.django_db

SET = {"type": "context_set", "name": "interview_complete", "value": True, "tool": "save_plan",
       "agent": "InterviewAgent"}
WARNING = {"type": "warning", "name": "max_items", "value": 40, "tool": "tune",
           "rule": "constant", "text": "refused"}


def test_an_explicit_set_is_a_stored_flip_and_a_warning_is_counted(api: Api) -> None:
    run_id = api.start()["run_id"]
    response = api.events(run_id, [SET, WARNING, SET])
    assert response.status_code == 200, response.content
    assert response.json()["flips"] == [{
        "name": "interview_complete", "value": True, "trigger_index": None, "seq": 1,
        "cause": {"type": "context_set", "tool": "save_plan", "agent": "InterviewAgent"},
    }]
    run = Run.objects.get(pk=run_id)
    assert run.state["context"]["interview_complete"] is True
    assert run.state["execution"]["warnings"] == 1
    assert list(Flip.objects.filter(run=run).values_list("variable", "trigger_index", "seq")) == [
        ("interview_complete", None, 1)
    ]
    state = api.get(f"/api/runs/{run_id}/state/").json()
    assert state["state"]["execution"]["warnings"] == 1


@pytest.mark.parametrize(
    ("event", "error"),
    [
        pytest.param({**SET, "value": "yes"},
                     "value: interview_complete takes a boolean (the declared type), got a string",
                     id="derived-not-a-boolean"),
        pytest.param({"type": "context_set", "name": "max_items", "value": 40},
                     "name: declarative variable max_items is a constant", id="constant"),
        pytest.param({"type": "context_set", "name": "enterprise_id", "value": "x"},
                     "name: enterprise_id is the run's base", id="base"),
        pytest.param({**WARNING, "rule": "because"}, "rule: must be one of", id="warning-rule"),
        pytest.param({k: v for k, v in WARNING.items() if k != "value"},
                     "value: required for warning", id="warning-without-value"),
        pytest.param({**WARNING, "value": "https://u:secret@host/"},
                     "value: looks like a credential", id="warning-with-a-secret"),
    ],
)
def test_what_a_run_may_not_take_is_400_naming_the_field(
    api: Api, event: dict[str, Any], error: str
) -> None:
    run_id = api.start()["run_id"]
    response = api.events(run_id, [event])
    assert response.status_code == 400, response.content
    assert error in response.json()["error"]
    assert response.json()["error"].startswith("events[0].")
    assert not RunEvent.objects.filter(run_id=run_id).exists()
