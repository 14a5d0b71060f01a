"""Load shedding on the events POST: while the oldest POST a process holds has waited past
``API_EVENTS_SHED_AFTER_S``, a new one gets a 503 with Retry-After at once and nothing is
stored; the reporter backs off for it and delivers every event, once."""

from __future__ import annotations

import logging

import pytest

from contextadmin.errors import Overloaded
from runs import shedding
from runs.shedding import PostAdmission


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lowest(low: int, high: int) -> int:
    return low


@pytest.mark.parametrize(
    ("waited", "shed_after", "refused", "retry_after"),
    [
        (0.5, 2.0, False, None),  # young: admitted
        (2.0, 2.0, False, None),  # at the bound: admitted
        (2.5, 2.0, True, 3),  # past it: Retry-After about the wait, rounded up
        (0.2, 0.1, True, 1),  # at least a second
        (95.0, 2.0, True, 30),  # at most 30
        (500.0, 0.0, False, None),  # 0: never sheds
    ],
)
def test_a_post_is_refused_only_while_the_oldest_in_flight_has_waited_too_long(
    waited, shed_after, refused, retry_after
):
    clock = Clock()
    admission = PostAdmission(clock=clock, jitter=lowest)
    with admission.admitted(shed_after=shed_after):
        clock.now += waited
        if not refused:
            with admission.admitted(shed_after=shed_after):
                assert admission.in_flight == 2
            return
        with pytest.raises(Overloaded) as raised, admission.admitted(shed_after=shed_after):
            pytest.fail("admitted past the bound")
    assert raised.value.status == 503
    assert raised.value.headers() == {"Retry-After": str(retry_after)}
    assert "API_EVENTS_SHED_AFTER_S" in raised.value.message
    assert admission.in_flight == 0 and admission.shed == 1


def test_the_retry_after_is_spread_between_the_wait_and_twice_it():
    clock = Clock()
    seen = set()
    admission = PostAdmission(clock=clock)
    with admission.admitted(shed_after=1.0):
        clock.now += 4.2
        for _ in range(200):
            with pytest.raises(Overloaded) as raised, admission.admitted(shed_after=1.0):
                pass
            seen.add(int(raised.value.headers()["Retry-After"]))
    assert seen <= set(range(5, 11)) and len(seen) > 1


def test_once_the_old_post_is_answered_new_ones_are_admitted_and_one_line_says_so(caplog):
    clock = Clock()
    admission = PostAdmission(clock=clock, jitter=lowest)
    caplog.set_level(logging.WARNING, logger="runs.shedding")
    old = admission.admitted(shed_after=2.0)
    old.__enter__()
    clock.now += 3
    for _ in range(5):
        with pytest.raises(Overloaded), admission.admitted(shed_after=2.0):
            pass
    old.__exit__(None, None, None)
    with admission.admitted(shed_after=2.0):
        pass
    assert admission.shed == 5
    assert [record.getMessage().split(" (")[0] for record in caplog.records] == [
        "events POSTs refused",
        "events POSTs admitted again after 5 refused so far",
    ]


def test_the_events_post_answers_503_and_stores_nothing_while_the_process_is_behind(
    api, monkeypatch, settings, caplog
):
    settings.API_EVENTS_SHED_AFTER_S = 2.0
    clock = Clock()
    admission = PostAdmission(clock=clock, jitter=lowest)
    monkeypatch.setattr(shedding, "_admission", admission)
    run_id = api.start()["run_id"]
    event = {"type": "agent_text", "agent": "InterviewAgent", "text": "hello", "seq": 1}

    stuck = admission.admitted(shed_after=2.0)  # a POST this process still holds
    stuck.__enter__()
    clock.now += 5
    refused = api.events(run_id, [event])
    assert refused.status_code == 503
    assert refused["Retry-After"] == "5"
    assert refused.json()["retry_after"] == 5
    assert refused.json()["error"].startswith("server busy")
    assert api.get(f"/api/runs/{run_id}/state/").json()["seq"] == 0  # nothing stored
    assert not [r for r in caplog.records if r.name == "django.request"]  # one line, above

    stuck.__exit__(None, None, None)
    accepted = api.events(run_id, [event])
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["last_seq"] == 1
    assert admission.in_flight == 0  # every admitted POST gave its place back
