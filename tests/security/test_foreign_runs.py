"""A token scoped to one workflow learns nothing about another workflow's runs: everywhere a
token names a run, a foreign run is answered exactly as an unknown one (same status, same body
but for the id it sent), and a taken run id names neither the run's workflow nor enterprise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from contextadmin.asgi import application
from contextadmin.models import Workflow
from contextadmin.services import workflow_import
from runs import tokens
from runs.models import Run, RunEvent
from runs.services import lifecycle
from tests.runs.conftest import demo_config

FOREIGN, UNKNOWN = "foreign-run", "unknown-run"


def _site() -> dict[str, Any]:
    workflow_import(name="Generator", data=demo_config())
    workflow_import(name="Other", data=demo_config())
    lifecycle.run_start(workflow_name="Generator", enterprise_id="acme", run_id=FOREIGN)
    other = Workflow.objects.get(name="Other")
    return {"secret": tokens.api_token_create(name="scoped", workflow=other)[1]}


def _answer(method: str, path: str, secret: str, body: Any = None) -> tuple[int, Any]:
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    if method == "POST":
        response = client.post(path, json.dumps(body), content_type="application/json", **headers)
    else:
        response = client.get(path, **headers)
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, json.loads(content)


EVENT = {"type": "agent_text", "agent": "a", "text": "hi"}
HTTP_CASES = [  # (name, method, path with {run}, body)
    ("events POST", "POST", "/api/runs/{run}/events/", {"events": [EVENT]}),
    ("events POST with seq", "POST", "/api/runs/{run}/events/", {"events": [{**EVENT, "seq": 1}]}),
    ("events POST run_status", "POST", "/api/runs/{run}/events/",
     {"events": [{"type": "run_status", "status": "cancelled"}]}),
    ("events GET", "GET", "/api/runs/{run}/events/", None),
    ("events GET jsonl", "GET", "/api/runs/{run}/events/?format=jsonl", None),
    ("state GET", "GET", "/api/runs/{run}/state/", None),
    ("state GET at", "GET", "/api/runs/{run}/state/?at=0", None),
    ("resolve GET (staff only: a token is no credential there)", "GET",
     "/api/runs/{run}/resolve/?template=x", None),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("name", "method", "path", "body"), HTTP_CASES,
                         ids=[case[0] for case in HTTP_CASES])
def test_a_foreign_run_answers_exactly_as_an_unknown_one(name, method, path, body):
    secret = _site()["secret"]
    foreign = _answer(method, path.format(run=FOREIGN), secret, body)
    unknown = _answer(method, path.format(run=UNKNOWN), secret, body)
    assert foreign[0] == unknown[0] and foreign[0] in (401, 404), (name, foreign, unknown)
    assert json.dumps(foreign[1]).replace(FOREIGN, "X") == json.dumps(unknown[1]).replace(
        UNKNOWN, "X"
    ), name
    for leak in ("Generator", "acme", "scoped"):
        assert leak not in json.dumps(foreign[1]), (name, foreign)
    assert RunEvent.objects.count() == 0
    assert Run.objects.get(pk=FOREIGN).status == "running"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("workflow", "enterprise"), [("Other", "acme"), ("Other", "globex")],
    ids=["same-enterprise", "other-enterprise"],
)
def test_a_taken_run_id_names_neither_workflow_nor_enterprise(workflow, enterprise):
    secret = _site()["secret"]
    status, body = _answer("POST", "/api/runs/", secret,
                           {"workflow": workflow, "enterprise_id": enterprise, "run_id": FOREIGN})
    assert status == 409 and body["error"].startswith("run_id:"), body
    assert "Generator" not in json.dumps(body) and "acme" not in json.dumps(body), body
    # the same refusal a run of the token's own workflow and another enterprise gets
    lifecycle.run_start(workflow_name="Other", enterprise_id="initech", run_id="own-run")
    own = _answer("POST", "/api/runs/", secret,
                  {"workflow": workflow, "enterprise_id": enterprise, "run_id": "own-run"})
    assert (own[0], own[1]["error"].replace("own-run", "X")) == (
        status, body["error"].replace(FOREIGN, "X")
    )


@pytest.mark.django_db(transaction=True)
async def test_the_ingest_socket_answers_a_foreign_run_as_an_unknown_one():
    secret = (await sync_to_async(_site)())["secret"]
    answers = []
    for run_id in (FOREIGN, UNKNOWN):
        comm = WebsocketCommunicator(application, f"/ws/ingest/{run_id}/",
                                     headers=[(b"authorization", f"Bearer {secret}".encode())])
        await comm.connect()
        reply = await comm.receive_json_from()
        closed = await comm.receive_output()
        answers.append((reply["status"], reply["error"].replace(run_id, "X"), closed["code"]))
        await comm.disconnect()
    assert answers[0] == answers[1] and answers[0][0] == 404, answers
