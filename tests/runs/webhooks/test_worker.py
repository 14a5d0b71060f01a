"""The worker as deployed: ``manage.py db_worker`` processes beside Daphne, killed with -9.

Timeouts, backoff and the tick are scaled down through settings (``workers.WORKER_ENV``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django_tasks_db.management.commands import db_worker as tasks_db_worker

from devservers.processes import free_port, manage, server_env
from runs.webhooks.management.commands import db_worker
from tests.reliability.helpers import Stack, copy_sqlite, http_json, seed
from tests.runs.webhooks.receiver import Receiver, Reply
from tests.runs.webhooks.workers import WORKER_ENV, Worker, deliveries
from tests.support.demo import demo_events

HANDOFF = {"type": "handoff", "agent": "InterviewAgent", "target": "ContextVariablesAgent"}


def test_manage_py_db_worker_is_django_tasks_dbs_worker_that_schedules_the_tick() -> None:
    # Fails when django_tasks_db moves its command: ours extends its public handle().
    assert issubclass(db_worker.Command, tasks_db_worker.Command)
    assert "handle" in vars(db_worker.Command)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("webhooks-seed") / "seed.sqlite3"
    return path, seed(server_env(f"sqlite:///{path}", MONGODB_URI=""))


@pytest.fixture
def stack(seeded, tmp_path: Path) -> Iterator[Stack]:
    template, credentials = seeded
    database = tmp_path / "db.sqlite3"
    copy_sqlite(template, database)
    env = server_env(f"sqlite:///{database}", MONGODB_URI="", **WORKER_ENV)
    stack = Stack(tmp_path, env, credentials)
    stack.database = database  # type: ignore[attr-defined]
    workers: list[Worker] = []
    stack.workers = workers  # type: ignore[attr-defined]
    try:
        yield stack
    finally:
        for worker in workers:
            worker.kill()
        stack.stop()


def _worker(stack: Stack) -> Worker:
    worker = Worker(env=stack.env, log_path=stack.workdir / f"worker{len(stack.workers)}.log")
    stack.workers.append(worker)  # type: ignore[attr-defined]
    return worker.start()


def _subscribe(stack: Stack, receiver: Receiver, events: str) -> None:
    out = manage(stack.env, "webhook_add", receiver.url(), "--events", events)
    receiver.secret = out.stdout.strip()


def _run(url: str, secret: str, events: list[dict]) -> str:
    status, started = http_json(
        "POST", f"{url}/api/runs/", {"workflow": "Generator", "enterprise_id": "acme"},
        token=secret,
    )
    assert status == 201, started
    run_id = started["run_id"]
    status, body = http_json("POST", f"{url}/api/runs/{run_id}/events/", {"events": events},
                             token=secret)
    assert status == 200, body  # committed
    return run_id


def _wait(condition, *, timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


@pytest.mark.slow
def test_worker_killed_mid_delivery_redelivers_with_the_same_id(stack) -> None:
    receiver = Receiver().start()
    try:
        _subscribe(stack, receiver, "flag_flipped")
        receiver.replies = [Reply(200, delay_s=30)]  # holds the first request
        server = stack.start_daphne()
        worker = _worker(stack)
        _run(server.url, stack.secret, demo_events()[:6])
        first = receiver.wait(1, timeout=30)[0]
        worker.kill()  # -9, mid-request: the delivery stays leased, its task "running"
        assert deliveries(stack.database)[0]["status"] == "pending"
        _worker(stack)
        received = receiver.wait(2, timeout=30)
        _wait(lambda: deliveries(stack.database)[0]["status"] == "delivered", what="delivered")
        assert received[1].message_id == first.message_id
        assert not received[0].error and not received[1].error  # both signed
        assert received[1].payload["data"]["flag"] == "interview_complete"
    finally:
        receiver.stop()


@pytest.mark.slow
def test_daphne_killed_after_commit_is_delivered_once_the_worker_runs(stack) -> None:
    receiver = Receiver().start()
    try:
        _subscribe(stack, receiver, "flag_flipped,handoff,run_started")
        server = stack.start_daphne()
        run_id = _run(server.url, stack.secret, [*demo_events()[:6], HANDOFF])
        server.kill()  # -9 right after the commit, before any worker ran
        stored = deliveries(stack.database)
        assert [d["event"] for d in stored] == ["run_started", "flag_flipped", "handoff"]
        assert receiver.received == []
        _worker(stack)
        received = receiver.wait(3, timeout=30)
        assert [r.payload["type"] for r in received] == [d["event"] for d in stored]
        assert [r.message_id for r in received] == [d["message_id"] for d in stored]
        assert {r.payload["data"]["run_id"] for r in received} == {run_id}
    finally:
        receiver.stop()


@pytest.mark.slow
def test_a_receiver_down_then_back_gets_everything_in_order_with_the_first_ids(stack) -> None:
    """The 10-minute outage scaled down to about 4 s (the backoff is scaled down with it)."""
    port = free_port()
    server = stack.start_daphne()
    secret_holder = Receiver(port=0)  # only to read the secret into
    _subscribe(stack, secret_holder, "flag_flipped,handoff,run_ended,run_started")
    secret_holder.server.server_close()
    manage(stack.env, "shell", "-c",
           f"from runs.webhooks.models import Subscription as S; "
           f"S.objects.update(url='http://127.0.0.1:{port}/hook')")
    _worker(stack)
    time.sleep(1.2)  # Daphne's cached subscriptions see the new URL (at most 1 s old)
    runs = [
        _run(server.url, stack.secret, [*demo_events()[:6], HANDOFF,
                                        {"type": "run_status", "status": "completed"}])
        for _ in range(3)
    ]
    stored = deliveries(stack.database)
    assert len(stored) == 12
    time.sleep(4.0)  # down: every attempt is refused
    assert all(d["status"] == "pending" for d in deliveries(stack.database))
    receiver = Receiver(secret=secret_holder.secret, port=port).start()
    try:
        received = receiver.wait(12, timeout=60)
        _wait(lambda: all(d["status"] == "delivered" for d in deliveries(stack.database)),
              what="all delivered")
        assert all(not r.error for r in received)
        assert {r.message_id for r in received} == {d["message_id"] for d in stored}
        assert len(received) == 12  # each once, none with a new id
        for run_id in runs:
            order = [r.payload["type"] for r in received if r.payload["data"]["run_id"] == run_id]
            assert order == ["run_started", "flag_flipped", "handoff", "run_ended"]
    finally:
        receiver.stop()
