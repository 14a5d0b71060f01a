"""Ingest of many runs at once (issue 14, item 16: B11) and a state not rewritten per batch
(item 15): the group commit keeps each batch all-or-nothing, in order, and answers each run
as if it were ingested alone; the stored state is rewritten only when a reader needs it."""

from __future__ import annotations

import asyncio

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextadmin.errors import BadRequest, Conflict, NotFound
from runs.batching import GroupCommitter
from runs.models import Flip, Run, RunEvent
from runs.services import ingest, lifecycle
from runs.services.ingest import IngestRequest, events_ingest_many
from runs.state import caches, run_state_at, stored_state_seq
from runs.webhooks.services import subscriptions

CHAT = [{"type": "agent_text", "agent": "InterviewAgent", "text": f"question {i}"}
        for i in range(20)]
FLIP = {"type": "agent_text", "agent": "InterviewAgent", "text": "NEXT"}  # interview_complete


def started(count: int, *, enterprise_id: str = "") -> list[str]:
    return [
        lifecycle.run_start(
            workflow_name="Generator", enterprise_id=enterprise_id or f"e{i}"
        ).run.pk
        for i in range(count)
    ]


# -- the group commit (runs.services.ingest.events_ingest_many) ------------------------------------
@pytest.mark.django_db
def test_many_runs_commit_together_and_each_is_answered_as_alone(generator):
    runs = started(3)
    alone = started(1)[0]
    requests = [IngestRequest(run_id=run_id, events=CHAT[:2]) for run_id in runs]
    outcomes = events_ingest_many(requests=requests)
    reference = ingest.event_ingest(run_id=alone, events=CHAT[:2])
    assert [o.acks for o in outcomes] == [reference.acks] * 3
    for run_id in runs:
        assert list(RunEvent.objects.filter(run_id=run_id).values_list("seq", flat=True)) == [1, 2]
        assert Run.objects.get(pk=run_id).last_seq == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("bad", "error", "field"),
    [
        (IngestRequest(run_id="nope", events=CHAT[:1]), NotFound, "run_id"),
        (IngestRequest(run_id="RUN", events="not a list"), BadRequest, "events"),
        (IngestRequest(run_id="RUN", events=[{"type": "agent_text"}]), BadRequest, "events[0]"),
        (IngestRequest(run_id="RUN", events=[{**CHAT[0], "seq": 9}]), Conflict, "events[0].seq"),
        (IngestRequest(run_id="RUN", events=[CHAT[0], {"type": "bogus"}]), BadRequest,
         "events[1]"),
    ],
)
def test_a_refused_batch_stores_nothing_and_holds_up_no_other(generator, bad, error, field):
    good, target = started(2)
    bad = IngestRequest(run_id=bad.run_id.replace("RUN", target), events=bad.events)
    outcomes = events_ingest_many(requests=[IngestRequest(run_id=good, events=CHAT[:1]), bad])
    assert outcomes[0].last_seq == 1
    assert isinstance(outcomes[1], error) and outcomes[1].message.startswith(field)
    assert RunEvent.objects.filter(run_id=target).count() == 0
    assert Run.objects.get(pk=target).last_seq == 0
    # the refused run takes its next batch as if nothing happened
    assert ingest.event_ingest(run_id=target, events=CHAT[:1]).last_seq == 1


@pytest.mark.django_db
def test_a_run_named_twice_in_a_group_applies_its_batches_in_order(generator):
    [run_id] = started(1)
    outcomes = events_ingest_many(requests=[
        IngestRequest(run_id=run_id, events=[{**CHAT[0], "seq": 1}]),
        IngestRequest(run_id=run_id, events=[{**CHAT[1], "seq": 2}]),
        IngestRequest(run_id=run_id, events=[{**CHAT[0], "seq": 1}]),  # a retry: acked again
    ])
    assert [o.last_seq for o in outcomes] == [1, 2, 2]
    assert outcomes[2].acks[0]["duplicate"] is True
    texts = RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("payload__text",
                                                                             flat=True)
    assert list(texts) == ["question 0", "question 1"]


@pytest.mark.django_db
def test_a_group_costs_the_same_queries_for_5_or_50_runs(
    generator, django_capture_on_commit_callbacks, monkeypatch
):
    # Ingest re-reads the webhooks' active set once a second; on a slow machine that second can
    # end inside one capture and not the other, so the set stays warm for this test.
    monkeypatch.setattr(subscriptions, "SUBSCRIPTIONS_CACHE_S", 3600.0)

    def queries(count: int) -> list[str]:
        runs = started(count)
        with django_capture_on_commit_callbacks(execute=True):  # keeps the live states
            events_ingest_many(requests=[IngestRequest(run_id=r, events=CHAT[:1]) for r in runs])
        subscriptions.subscriptions_active()
        with CaptureQueriesContext(connection) as captured:  # warm: the states are cached
            events_ingest_many(requests=[IngestRequest(run_id=r, events=CHAT[1:2]) for r in runs])
        return [q["sql"][:60] for q in captured]  # the statements, to show which one differs

    few, many = queries(5), queries(50)
    assert len(few) == len(many), (few, many)


@pytest.mark.django_db
def test_a_failed_shared_write_retries_each_batch_alone(generator, monkeypatch):
    """One batch whose write fails (a database error, not a refusal) costs only itself."""
    runs = started(3)
    original = ingest._batches_store
    calls: list[int] = []

    def store(applied):
        calls.append(len(applied))
        if len(applied) > 1:
            from django.db import DatabaseError

            raise DatabaseError("simulated: the shared write failed")
        return original(applied)

    monkeypatch.setattr(ingest, "_batches_store", store)
    outcomes = events_ingest_many(requests=[IngestRequest(run_id=r, events=CHAT[:2]) for r in runs])
    assert [o.last_seq for o in outcomes] == [2, 2, 2] and calls == [3, 1, 1, 1]
    assert RunEvent.objects.filter(run_id__in=runs).count() == 6


# -- the stored state (item 15) --------------------------------------------------------------------
@pytest.mark.django_db
def test_the_stored_state_is_rewritten_only_when_a_reader_needs_it(generator, monkeypatch):
    monkeypatch.setattr(ingest, "STATE_WRITE_EVERY", 8)
    [run_id] = started(1)

    def state_written(events) -> bool:
        with CaptureQueriesContext(connection) as captured:
            ingest.event_ingest(run_id=run_id, events=events)
        updates = [q["sql"] for q in captured if q["sql"].startswith('UPDATE "runs_run"')]
        assert len(updates) == 1, updates
        return '"state"' in updates[0]

    written = [state_written([event]) for event in CHAT[:7]]
    assert written == [False] * 7  # chat without flips: last_seq and flip_count only
    assert state_written([CHAT[7]]) is True  # STATE_WRITE_EVERY events behind
    assert state_written([CHAT[8]]) is False
    assert state_written([FLIP]) is True  # a flip: the runs list shows the flag
    assert state_written([{"type": "run_status", "status": "completed"}]) is True  # ended
    run = Run.objects.get(pk=run_id)
    assert stored_state_seq(run.state) == run.last_seq == 11


@pytest.mark.django_db
def test_the_latest_state_is_the_stored_one_plus_the_log_after_it(generator, monkeypatch):
    [run_id, reference] = started(2, enterprise_id="acme")
    for event in CHAT[:5]:
        ingest.event_ingest(run_id=run_id, events=[event])
    ingest.event_ingest(run_id=reference, events=CHAT[:5])
    run = Run.objects.get(pk=run_id)
    assert stored_state_seq(run.state) == 0  # not rewritten yet
    latest = run_state_at(run=run)
    assert latest.seq == 5
    assert latest.state["nodes"]["InterviewAgent"] == {"text": "question 4"}
    # another process (no live copy here) continues from the stored state and the log
    monkeypatch.setattr(caches, "_live_states", {})
    monkeypatch.setattr(caches, "_live_bytes", 0)
    result = ingest.event_ingest(run_id=run_id, events=[FLIP])
    assert result.last_seq == 6 and [f["name"] for f in result.flips] == ["interview_complete"]
    ingest.event_ingest(run_id=reference, events=[FLIP])
    both = [run_state_at(run=Run.objects.get(pk=r)).state for r in (run_id, reference)]
    assert both[0] == both[1]
    assert Flip.objects.filter(run_id=run_id).count() == 1


# -- the committer (runs.batching.GroupCommitter) --------------------------------------------------
async def test_what_arrives_during_a_commit_goes_in_the_next_round_in_order():
    rounds: list[list[str]] = []
    gate = asyncio.Event()

    async def commit(requests: list[str]) -> list[str]:
        rounds.append(list(requests))
        if len(rounds) == 1:
            await gate.wait()
        return [f"ok {r}" for r in requests]

    committer = GroupCommitter(commit=commit, max_size=3)
    first = asyncio.ensure_future(committer.submit("a"))
    await asyncio.sleep(0)
    later = [asyncio.ensure_future(committer.submit(name)) for name in "bcde"]
    await asyncio.sleep(0)
    gate.set()
    assert await first == "ok a"
    assert [await f for f in later] == ["ok b", "ok c", "ok d", "ok e"]
    assert rounds == [["a"], ["b", "c", "d"], ["e"]]  # at most max_size a round


async def test_a_failed_round_fails_its_callers_and_the_next_round_still_runs():
    async def commit(requests: list[str]) -> list[str]:
        if "boom" in requests:
            raise RuntimeError("the pool is gone")
        return requests

    committer = GroupCommitter(commit=commit, max_size=1)
    outcomes = await asyncio.gather(
        committer.submit("boom"), committer.submit("fine"), return_exceptions=True
    )
    assert isinstance(outcomes[0], RuntimeError) and outcomes[1] == "fine"


async def test_a_cancelled_caller_is_left_out_of_the_round():
    rounds: list[list[str]] = []
    gate = asyncio.Event()

    async def commit(requests: list[str]) -> list[str]:
        rounds.append(list(requests))
        await gate.wait()
        return requests

    committer = GroupCommitter(commit=commit, max_size=10)
    first = asyncio.ensure_future(committer.submit("first"))
    await asyncio.sleep(0)
    gone = asyncio.ensure_future(committer.submit("gone"))
    kept = asyncio.ensure_future(committer.submit("kept"))
    await asyncio.sleep(0)
    gone.cancel()
    gate.set()
    assert await first == "first" and await kept == "kept"
    assert rounds == [["first"], ["kept"]]



@pytest.mark.django_db
def test_a_batch_whose_own_write_fails_fails_alone(generator, monkeypatch):
    """A database error on one batch's write (not a refusal) is that batch's answer only."""
    from django.db import DatabaseError

    good, doomed, other = started(3)
    original = ingest._batches_store

    def store(applied):
        if any(run.pk == doomed for run, _ in applied):
            raise DatabaseError("simulated: this run's write failed")
        return original(applied)

    monkeypatch.setattr(ingest, "_batches_store", store)
    outcomes = events_ingest_many(
        requests=[IngestRequest(run_id=r, events=CHAT[:1]) for r in (good, doomed, other)]
    )
    assert outcomes[0].last_seq == 1 and outcomes[2].last_seq == 1
    assert isinstance(outcomes[1], DatabaseError)
    assert RunEvent.objects.filter(run_id=doomed).count() == 0
