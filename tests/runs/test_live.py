"""End to end on real servers: Daphne serving HTTP and websockets, Redis between two Daphnes."""

from __future__ import annotations

import json
import threading

import pytest
from contextadmin_sdk.client import RunReporter
from django.contrib.auth import get_user_model
from django.test import Client
from websockets.sync.client import connect

from contextadmin.services import workflow_import
from devservers.migrated import database_migrate
from devservers.processes import Daphne, Redis, manage, server_env
from runs.tokens import api_token_create
from tests.support.demo import demo_config, demo_events
from tests.support.live import LiveServerTestCase


def ws_headers(origin: str, session: str) -> dict[str, str]:
    return {"Origin": origin, "Cookie": f"sessionid={session}"}


def receive_json(ws, timeout: float = 10.0) -> dict:
    return json.loads(ws.recv(timeout=timeout))


class LiveRunTests(LiveServerTestCase):
    def setUp(self) -> None:
        workflow_import(name="Generator", data=demo_config())
        user = get_user_model().objects.create_user("op", password="pw-12345678", is_staff=True)
        client = Client()
        client.force_login(user)
        self.session = client.cookies["sessionid"].value
        self.secret = api_token_create(name="rt")[1]

    def test_events_posted_over_http_reach_an_inspector_socket_with_their_flips(self) -> None:
        reporter = RunReporter(self.live_server_url, self.secret, batch_size=1)
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        with connect(
            f"{self.live_server_ws_url}/ws/runs/{run_id}/",
            additional_headers=ws_headers(self.live_server_url, self.session),
        ) as ws:
            snapshot = receive_json(ws)
            assert snapshot["type"] == "snapshot"
            assert snapshot["state"]["context"]["interview_complete"] is False
            for event in demo_events():
                reporter.event(**event)
            reporter.close()
            messages = [receive_json(ws) for _ in range(8)]
        assert [m["seq"] for m in messages] == list(range(1, 9))
        assert messages[4]["flips"][0]["name"] == "interview_complete"
        assert reporter.flips[0]["name"] == "interview_complete"

    def test_ingest_over_a_websocket_on_real_daphne(self) -> None:
        reporter = RunReporter(self.live_server_url, self.secret)
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        with connect(
            f"{self.live_server_ws_url}/ws/ingest/{run_id}/",
            additional_headers={"Authorization": f"Bearer {self.secret}"},
        ) as ws:
            acks = []
            for event in demo_events():
                ws.send(json.dumps(event))
                acks.append(receive_json(ws))
        assert [a["seq"] for a in acks] == list(range(1, 9))
        assert acks[4]["flips"][0]["name"] == "interview_complete"


@pytest.mark.redis
@pytest.mark.slow
def test_two_daphne_processes_share_events_through_redis(tmp_path):
    """Post to one Daphne, watch on the other: the channels_redis layer carries the events."""
    redis = Redis(workdir=tmp_path).start()
    env = server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", REDIS_URL=redis.url)
    servers: list[Daphne] = []
    try:
        database_migrate(env)
        manage(env, "demo_setup")
        secret = manage(env, "create_api_token", "rt").stdout.strip()
        session = (
            manage(
                env,
                "shell",
                "-c",
                "from django.contrib.auth import get_user_model; from django.test import Client; "
                "u=get_user_model().objects.create_user("
                "'op', password='pw-12345678', is_staff=True); "
                "c=Client(); c.force_login(u); print(c.cookies['sessionid'].value)",
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        servers = [Daphne(env=env, log_path=tmp_path / f"daphne{i}.log").start() for i in range(2)]
        writer, watcher = servers
        reporter = RunReporter(writer.url, secret, batch_size=3)
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        received: list[dict] = []
        with connect(
            f"{watcher.ws_url}/ws/runs/{run_id}/",
            additional_headers=ws_headers(watcher.url, session),
        ) as ws:
            assert receive_json(ws)["type"] == "snapshot"
            ready = threading.Event()

            def listen() -> None:
                ready.set()
                while len(received) < 8:
                    received.append(receive_json(ws, timeout=20))

            listener = threading.Thread(target=listen)
            listener.start()
            ready.wait()
            for event in demo_events():
                reporter.event(**event)
            reporter.close()
            listener.join(timeout=30)
        assert [m["seq"] for m in received] == list(range(1, 9))
        assert received[4]["flips"][0]["name"] == "interview_complete"
    finally:
        for server in servers:
            server.stop()
        redis.stop()
