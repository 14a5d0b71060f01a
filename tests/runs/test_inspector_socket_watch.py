"""Inspector sockets that must end without any message to send: a session that lost its right
to watch (demoted, deactivated, logged out elsewhere) while its run or the runs list is quiet,
and a run deleted while its page is open."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session

from contextadmin.asgi import application
from runs import consumers
from runs.models import Run
from tests.support.inspector import watched_run

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://testserver")


@pytest.fixture(autouse=True)
def quick_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-read sessions every 0.2 s, so a test waits well under a second."""
    monkeypatch.setattr(consumers, "SESSION_WATCH_S", 0.2)
    monkeypatch.setattr(consumers, "SESSION_RECHECK_S", 0.1)
    monkeypatch.setattr(consumers, "SHARED_READ_S", 0.0)


def _inspector(path: str, session: str) -> WebsocketCommunicator:
    headers = [ORIGIN, (b"cookie", f"sessionid={session}".encode())]
    return WebsocketCommunicator(application, path, headers=headers)


def _demote() -> None:
    get_user_model().objects.filter(username="op").update(is_staff=False)


def _deactivate() -> None:
    get_user_model().objects.filter(username="op").update(is_active=False)


def _log_out() -> None:
    Session.objects.all().delete()


async def _closed_with(comm: WebsocketCommunicator, *, within: float) -> int:
    """The close code the socket gets within ``within`` s, skipping what it was sent first."""
    while True:
        output = await comm.receive_output(timeout=within)
        if output["type"] == "websocket.close":
            return int(output["code"])


@pytest.mark.parametrize(
    ("change", "code"),
    [
        pytest.param(_demote, 4403, id="no-longer-staff"),
        pytest.param(_deactivate, 4401, id="deactivated"),
        pytest.param(_log_out, 4401, id="logged-out-elsewhere"),
    ],
)
@pytest.mark.parametrize("page", ["run", "list"])
async def test_a_quiet_socket_is_closed_soon_after_its_session_may_no_longer_watch(
    change, code, page
):
    session, run_id = await sync_to_async(watched_run)()
    comm = _inspector(f"/ws/runs/{run_id}/" if page == "run" else "/ws/runs/", session)
    assert (await comm.connect())[0]
    if page == "run":
        assert json.loads(await comm.receive_from(timeout=5))["type"] == "snapshot"
    assert await comm.receive_nothing(timeout=0.5)  # still welcome: nothing to say, kept open
    await sync_to_async(change)()
    # nothing is sent to it (no event, no run changes): it is closed all the same
    assert await _closed_with(comm, within=2) == code
    await comm.disconnect()


async def test_a_run_deleted_while_its_page_is_open_is_said_at_the_next_ping():
    session, run_id = await sync_to_async(watched_run)()
    comm = _inspector(f"/ws/runs/{run_id}/", session)
    assert (await comm.connect())[0]
    await comm.receive_from(timeout=5)  # the snapshot
    await comm.send_to(text_data='{"type": "ping"}')
    assert json.loads(await comm.receive_from(timeout=5)) == {"type": "pong", "seq": 0}
    await sync_to_async(Run.objects.filter(pk=run_id).delete)()
    await comm.send_to(text_data='{"type": "ping"}')
    message = json.loads(await comm.receive_from(timeout=5))
    assert message["type"] == "error" and message["status"] == 404, message
    assert message["error"].startswith("run_id: no run")
    assert await _closed_with(comm, within=2) == 4404
    await comm.disconnect()
