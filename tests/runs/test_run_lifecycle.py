"""The run lifecycle (docs/architecture.md; the rule is
``contextadmin_sdk.engine.state.RUN_TRANSITIONS``):
running ⇄ paused → completed | failed | cancelled. An ended run takes no more events (409
naming its status, over HTTP and the ingest socket), is never reopened, keeps its ``ended_at``,
and frees its place under the per-token cap for good; a retried seq is still acknowledged."""

from __future__ import annotations

import itertools

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from contextadmin_sdk.engine import (
    RUN_ENDED_STATUSES,
    RUN_TRANSITIONS,
    RunEnded,
    RunState,
    run_status_problem,
)
from contextadmin_sdk.engine.events import RUN_STATUSES

from contextadmin.asgi import application
from runs.models import Run, RunEvent
from tests.runs.conftest import Api, demo_config

ENDED = sorted(RUN_ENDED_STATUSES)
FRESH = {"workflow": "Generator", "enterprise_id": "a"}
BASE = {"enterprise_id": "acme", "workflow_name": "Generator"}


# -- the rule, in the engine --------------------------------------------------------------------
ALLOWED = {  # the documented table: from -> the statuses it may move to
    "running": {"running", "paused", "completed", "failed", "cancelled"},
    "paused": {"running", "paused", "completed", "failed", "cancelled"},
    "completed": set(),
    "failed": set(),
    "cancelled": set(),
}


@pytest.mark.parametrize(("current", "new"), list(itertools.product(RUN_STATUSES, RUN_STATUSES)))
def test_run_status_transitions(current, new):
    assert {k: set(v) for k, v in RUN_TRANSITIONS.items()} == ALLOWED
    allowed = new in ALLOWED[current]
    assert (run_status_problem(current, new) is None) == allowed
    state = RunState(demo_config(), BASE)
    if current != "running":
        state.apply({"type": "run_status", "status": current})
    if allowed:
        state.apply({"type": "run_status", "status": new})
        assert state.get("execution.status") == new
    else:
        with pytest.raises(RunEnded) as ended:
            state.apply({"type": "run_status", "status": new})
        assert ended.value.status == current
        assert state.get("execution.status") == current and state.last_seq == 1


LATE_EVENTS = [
    {"type": "agent_text", "agent": "interviewer", "text": "one more"},
    {"type": "tool_response", "tool": "save_plan", "status": "success"},
    {"type": "context_set", "name": "max_items", "value": 3},
    {"type": "handoff", "agent": "interviewer", "target": "planner"},
    {"type": "run_status", "status": "running"},
    {"type": "run_status", "status": "paused"},
    *({"type": "run_status", "status": s} for s in RUN_STATUSES if s in RUN_ENDED_STATUSES),
]


@pytest.mark.parametrize("ended", ENDED)
@pytest.mark.parametrize("late", LATE_EVENTS, ids=lambda e: f"{e['type']}-{e.get('status', '')}")
def test_an_ended_state_takes_no_event(ended, late):
    state = RunState(demo_config(), BASE)
    state.apply({"type": "run_status", "status": ended})
    before = state.to_dict()
    problem = f"run_status: the run has ended ({ended}): it takes no more events"
    assert state.problems(late) == [problem]
    with pytest.raises(RunEnded):
        state.apply(late)
    assert state.to_dict() == before


# -- the server: HTTP ---------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("ended", ENDED)
@pytest.mark.parametrize("with_seq", [False, True], ids=["server-seq", "client-seq"])
def test_an_ended_run_refuses_every_later_batch_with_409_naming_its_status(
    api: Api, ended, with_seq
):
    run_id = api.start()["run_id"]
    response = api.events(run_id, [{"type": "agent_text", "agent": "interviewer", "text": "hi"},
                                   {"type": "run_status", "status": "paused"},
                                   {"type": "run_status", "status": "running"},
                                   {"type": "run_status", "status": ended, "seq": 4}])
    assert response.status_code == 200
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.last_seq) == (ended, 4) and run.ended_at is not None
    ended_at, stored = run.ended_at, RunEvent.objects.filter(run_id=run_id).count()
    for late in [*LATE_EVENTS, {"type": "agent_text", "agent": "a", "text": "gap", "seq": 9}]:
        late = {**late, "seq": late.get("seq", 5)} if with_seq else late
        response = api.events(run_id, [late])
        assert response.status_code == 409, (late, response.content)
        body = response.json()
        assert body["run_status"] == ended and f"has ended ({ended})" in body["error"], body
        assert body["error"].startswith("events[0]")
    # a batch mixing a retry and a new event is refused whole
    response = api.events(run_id, [{"type": "run_status", "status": ended, "seq": 4},
                                   {"type": "agent_text", "agent": "a", "text": "x", "seq": 5}])
    assert response.status_code == 409 and response.json()["run_status"] == ended
    # the retried final event alone is acknowledged again, idempotently
    response = api.events(run_id, [{"type": "run_status", "status": ended, "seq": 4}])
    assert response.status_code == 200, response.content
    assert response.json()["acks"] == [{"seq": 4, "flips": [], "duplicate": True}]
    run.refresh_from_db()
    assert (run.status, run.last_seq, run.ended_at) == (ended, 4, ended_at)
    assert run.state["execution"]["status"] == ended
    assert RunEvent.objects.filter(run_id=run_id).count() == stored


@pytest.mark.django_db
def test_running_never_reopens_so_the_token_cap_holds(api: Api, settings):
    settings.API_MAX_RUNNING_RUNS_PER_TOKEN = 1
    first = api.start(run_id="r1")["run_id"]
    assert api.post("/api/runs/", FRESH).status_code == 429
    api.events(first, [{"type": "run_status", "status": "completed"}])
    second = api.start(run_id="r2")["run_id"]
    # the ended run cannot come back to take a place beside the new one
    assert api.events(first, [{"type": "run_status", "status": "running"}]).status_code == 409
    assert Run.objects.get(pk=first).status == "completed"
    assert api.post("/api/runs/", FRESH).status_code == 429
    assert Run.objects.exclude(status__in=ENDED).count() == 1 and second == "r2"


# -- the server: the ingest socket --------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
async def test_the_ingest_socket_refuses_events_for_an_ended_run(client, token_secret):
    api = Api(client, token_secret)
    run_id = (await sync_to_async(api.start)())["run_id"]
    comm = WebsocketCommunicator(application, f"/ws/ingest/{run_id}/",
                                 headers=[(b"authorization", f"Bearer {token_secret}".encode())])
    assert (await comm.connect())[0]
    await comm.send_json_to({"type": "run_status", "status": "cancelled"})
    assert (await comm.receive_json_from())["type"] == "ack"
    for late in ({"type": "run_status", "status": "running"},
                 {"type": "agent_text", "agent": "a", "text": "late"}):
        await comm.send_json_to(late)
        reply = await comm.receive_json_from()
        assert reply["type"] == "error" and reply["status"] == 409, reply
        assert reply["run_status"] == "cancelled" and "has ended (cancelled)" in reply["error"]
    await comm.disconnect()
    run = await Run.objects.aget(pk=run_id)
    assert (run.status, run.last_seq) == ("cancelled", 1) and run.ended_at is not None


def test_ended_statuses_have_one_owner():
    """No module keeps its own copy of the engine's RUN_ENDED_STATUSES."""
    import contextadmin_sdk.client
    import contextadmin_sdk.integrations.autogen.session
    from contextadmin_sdk.engine import RUN_ENDED_STATUSES

    import runs.selectors
    import runs.services.lifecycle

    for module in (contextadmin_sdk.client, runs.selectors, runs.services.lifecycle,
                   contextadmin_sdk.integrations.autogen.session):
        copies = [name for name, value in vars(module).items()
                  if isinstance(value, frozenset | tuple | set) and value and name.isupper()
                  and {str(v) for v in value} == set(RUN_ENDED_STATUSES)]
        assert copies in ([], ["RUN_ENDED_STATUSES"]), (module.__name__, copies)
