"""A day of hostile use, against real parts: a runtime's token forging server log lines
through a run's enterprise id (real Daphne, its real log); a token reading the server's
environment and any MongoDB collection through definitions of its own (real Daphne,
nx-27017); an ingest socket flooded by a client that never waits for its acks (real Daphne, a
real websocket client); a webhook receiver whose answer holds a NUL byte (Daphne, a db_worker
and PostgreSQL, a real receiver); a session cookie holding a NUL (Daphne on PostgreSQL); a
receiver whose garbled status line would write into the log; and webhook URLs that reach a
private address through an IPv6 form carrying an IPv4 one (NAT64, 6to4, IPv4-compatible,
SIIT), refused when saved and, for a URL saved before the rule, when sent (no resolver here can
answer a name with such an address: the URLs hold the literals, which take the same check)."""

from __future__ import annotations

import io
import json
import logging
import secrets
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from devservers import postgres
from devservers.migrated import database_migrate
from devservers.mongo import MongoServer
from devservers.processes import Daphne, manage, server_env
from runs.services.lifecycle import run_start
from runs.webhooks.models import Delivery, Subscription
from runs.webhooks.services.delivery import deliveries_drain
from runs.webhooks.services.subscriptions import subscriptions_cache_clear
from tests.runs.conftest import demo_config
from tests.runs.webhooks.receiver import Receiver, Reply
from tests.runs.webhooks.workers import WORKER_ENV, Worker

FORGED = "2026-11-27 23:59:59,000 ERROR runs.auth: forged line"
BODY_MAX = 65_536  # API_MAX_BODY_BYTES of this server: a socket's backlog is 4 of it, 256 kB


@dataclass
class Site:
    daphne: Daphne
    token: str
    log_path: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("day-of-use")
    env = server_env(
        f"sqlite:///{workdir / 'db.sqlite3'}",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        MONGODB_URI="",
        API_MAX_BODY_BYTES=str(BODY_MAX),
    )
    config = workdir / "context_variables.json"
    config.write_text(json.dumps(demo_config()))
    database_migrate(env)
    manage(env, "import_context", str(config), "--workflow", "Generator")
    token = manage(env, "create_api_token", "runtime").stdout.strip().splitlines()[-1]
    log_path = workdir / "daphne.log"
    daphne = Daphne(env, log_path).start()
    try:
        yield Site(daphne, token, log_path)
    finally:
        daphne.stop()


def post(site: Site, path: str, body: Any, *, method: str = "POST") -> tuple[int, Any]:
    request = urllib.request.Request(  # noqa: S310  (loopback test server)
        f"{site.daphne.url}{path}", data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {site.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def log_lines(site: Site) -> list[str]:
    time.sleep(0.3)  # Daphne's output is unbuffered; give the pipe a moment
    return site.log_path.read_text(errors="replace").splitlines()


@pytest.mark.parametrize(
    "enterprise_id",
    [
        f"acme\n{FORGED}",  # a line of its own in the server's log
        f"acme\r{FORGED}",  # a terminal shows it over the real line
        "acme\u202egnp.exe",  # a bidi override: pages and logs show it reordered
        "acme\x1b[2J",  # an ANSI escape: clears the terminal tailing the log
    ],
    ids=["newline", "carriage-return", "bidi-override", "ansi-escape"],
)
def test_an_enterprise_id_cannot_forge_or_disguise_log_lines(site: Site, enterprise_id: str):
    start = {"workflow": "Generator", "enterprise_id": enterprise_id}
    status, body = post(site, "/api/runs/", start)
    assert status == 400, body
    assert body["error"].startswith("enterprise_id: ")
    lines = log_lines(site)
    assert not any(line.startswith(FORGED) or "\u202e" in line or "\x1b" in line for line in lines)
    assert not any(FORGED in line and "runs.services.lifecycle" in line for line in lines)


def test_printable_enterprise_ids_still_start_runs(site: Site):
    for enterprise_id in ("Société Générale & Co. <ltd>", "株式会社 例", "a" * 200):
        status, body = post(
            site, "/api/runs/", {"workflow": "Generator", "enterprise_id": enterprise_id}
        )
        assert status == 201, body
    assert any(
        "started for Generator/Société Générale & Co. <ltd>" in line for line in log_lines(site)
    )


# -- a runtime's own definitions name what the server reads --------------------------------
SALT = "salt-4c1e9f0a7b"  # a server setting whose name the format lets a variable read
HASH = "pbkdf2_sha256$600000$q7Zr$Kp4w"  # a document of another application's collection


def variable(kind: str, name: str, **source: str) -> dict[str, Any]:
    return {"name": name, "type": "string", "description": "x", "source": {"type": kind, **source}}


@pytest.fixture(scope="module")
def mongo_site(
    tmp_path_factory: pytest.TempPathFactory, mongo_server: MongoServer
) -> Iterator[Site]:
    mongo_server.client["day_of_use"]["users"].delete_many({})
    mongo_server.client["day_of_use"]["users"].insert_one(
        {"email": "ceo@corp.example", "password_hash": HASH}
    )
    workdir = tmp_path_factory.mktemp("day-of-use-mongo")
    env = server_env(f"sqlite:///{workdir / 'db.sqlite3'}", MONGODB_URI=mongo_server.uri,
                     SIGNING_SALT=SALT)
    config = workdir / "context_variables.json"
    config.write_text(json.dumps(demo_config()))
    database_migrate(env)
    manage(env, "import_context", str(config), "--workflow", "Generator")
    token = manage(env, "create_api_token", "scoped", "--workflow", "Generator").stdout
    daphne = Daphne(env, workdir / "daphne.log").start()
    try:
        yield Site(daphne, token.strip().splitlines()[-1], workdir / "daphne.log")
    finally:
        daphne.stop()


@pytest.mark.mongo
def test_a_runtimes_own_definitions_cannot_read_the_servers_environment_or_mongodb(mongo_site):
    """A token scoped to Generator sends definitions of its own declaring the server's env var
    and another collection, looked up by a field and value of its choosing: neither is read."""
    definitions = demo_config()
    section = definitions["context_variables"]
    section["environment_variables"].append(variable("environment", "salt", env_var="SIGNING_SALT"))
    section["database_variables"].append(variable(
        "database", "stolen", database_name="day_of_use", collection="users",
        search_by="email", field="password_hash",
    ))
    start = {"workflow": "Generator", "enterprise_id": "ceo@corp.example",
             "definitions": definitions}
    status, body = post(mongo_site, "/api/runs/", start)
    assert status == 201, body
    assert SALT not in json.dumps(body) and HASH not in json.dumps(body)
    provenance = body["state"]["provenance"]
    for name in ("salt", "stolen", "concept_overview"):
        assert provenance[name]["reason"].startswith(("not read by the server", "SIGNING_SALT not"))
    assert "db.day_of_use.users.password_hash" in provenance["concept_overview"]["reason"]
    status, state = post(mongo_site, f"/api/runs/{body['run_id']}/state/", None, method="GET")
    assert status == 200 and SALT not in json.dumps(state) and HASH not in json.dumps(state)


@pytest.mark.mongo
def test_the_published_reads_are_still_made(mongo_site):
    """The published definitions, sent or not, read what they declare; own definitions that
    declare only published reads too."""
    own = demo_config()
    own["context_variables"]["declarative_variables"][0]["value"] = "edited"  # not published
    for definitions in (None, demo_config(), own):
        start = {"workflow": "Generator", "enterprise_id": "acme", "definitions": definitions}
        status, body = post(mongo_site, "/api/runs/", start)
        assert status == 201, body
        assert body["state"]["provenance"]["concept_overview"]["status"] == "resolved", body
        assert body["state"]["state"]["context"]["concept_overview"].startswith("Acme builds")


# -- an ingest socket's backlog ------------------------------------------------------------
def batch_frame(count: int) -> str:
    event = {"type": "agent_text", "agent": "InterviewAgent", "text": "x" * 80}
    return json.dumps({"events": [event] * count})


def test_a_socket_that_never_waits_for_acks_is_refused_not_buffered(site: Site):
    """100 batch frames of 36 kB sent at once (3.6 MB, over the 256 kB backlog): the sender
    gets the acks of what was stored, then an error naming the limit and close 4429; what is
    stored is exactly what was acknowledged. A sender that waits for each ack is never refused."""
    status, body = post(site, "/api/runs/", {"workflow": "Generator", "enterprise_id": "acme"})
    assert status == 201, body
    run_id, frame = body["run_id"], batch_frame(300)
    url = f"{site.daphne.ws_url}/ws/ingest/{run_id}/?token={site.token}"
    answers: list[dict[str, Any]] = []
    with connect(url, max_size=None, open_timeout=10) as ws:
        for _ in range(100):
            ws.send(frame)
        with pytest.raises(ConnectionClosed):
            while True:
                answers.append(json.loads(ws.recv(timeout=30)))
    assert ws.close_code == 4429, (ws.close_code, answers[-1:])
    *acks, refusal = answers
    assert refusal["status"] == 429 and "API_MAX_SOCKET_BACKLOG_BYTES" in refusal["error"]
    assert acks and all(ack["type"] == "batch_ack" for ack in acks)
    assert len(acks) < 100
    status, state = post(site, f"/api/runs/{run_id}/state/", None, method="GET")
    assert status == 200 and state["seq"] == acks[-1]["last_seq"] == 300 * len(acks)

    with connect(url, max_size=None, open_timeout=10) as ws:  # paced by its acks: all stored
        for n in range(1, 11):
            ws.send(frame)
            assert json.loads(ws.recv(timeout=30))["last_seq"] == 300 * (len(acks) + n)


# -- a receiver's answer that PostgreSQL cannot store ----------------------------------------
@pytest.fixture(scope="module")
def pg_stack(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, str], Daphne, str, Worker]]:
    tmp_path = tmp_path_factory.mktemp("day-of-use-pg")
    if not postgres.available():
        pytest.skip("PostgreSQL is not installed here")
    pg = postgres.Postgres().start()
    servers: list[Any] = []
    try:
        env = server_env(pg.create_database("nul"), MONGODB_URI="", **WORKER_ENV)
        config = tmp_path / "context_variables.json"
        config.write_text(json.dumps(demo_config()))
        database_migrate(env)
        manage(env, "import_context", str(config), "--workflow", "Generator")
        token = manage(env, "create_api_token", "runtime").stdout.strip().splitlines()[-1]
        servers.append(Daphne(env, tmp_path / "daphne.log").start())
        servers.append(Worker(env=env, log_path=tmp_path / "worker.log").start())
        yield env, servers[0], token, servers[1]
    finally:
        for server in reversed(servers):
            server.stop()
        pg.stop()


@pytest.mark.slow
def test_a_receiver_answering_with_a_nul_byte_gets_each_event_once(pg_stack):
    """The answer is kept (its first 500 bytes) with each attempt: a NUL in it must not fail
    that row after the request was sent, leaving the delivery to be sent again at every
    lease's end (every 3 s here) and the run's later events waiting behind it."""
    env, daphne, token, worker = pg_stack
    receiver = Receiver().start()
    receiver.default = Reply(status=200, body=b"accepted\x00 thanks")
    try:
        receiver.secret = manage(
            env, "webhook_add", receiver.url(), "--events", "run_started,run_ended"
        ).stdout.strip()
        site = Site(daphne, token, Path())
        status, body = post(site, "/api/runs/", {"workflow": "Generator", "enterprise_id": "a"})
        assert status == 201, body
        status, body = post(site, f"/api/runs/{body['run_id']}/events/", {
            "events": [{"type": "run_status", "status": "completed"}]
        })
        assert status == 200, body
        receiver.wait(2, timeout=20)
        time.sleep(8)  # past two leases: a delivery left unmarked would have come again
        assert [r.payload["type"] for r in receiver.received] == ["run_started", "run_ended"]
        assert len({r.message_id for r in receiver.received}) == 2
    finally:
        receiver.stop()
    assert "Traceback" not in worker.log_path.read_text(errors="replace")


NUL_SESSION = 'sessionid="\\000abcdefgh"'  # an octal escape: Django's cookie parser makes it a NUL


@pytest.mark.slow
def test_a_session_cookie_holding_a_nul_is_a_400_not_a_500(pg_stack):
    """Any visitor could send it: every page reading the session failed in PostgreSQL (500,
    a traceback logged at ERROR per request), and so did the inspector sockets' handshake."""
    _, daphne, _, _ = pg_stack
    for path in ("/", "/runs/", "/admin/", "/admin/login/", "/api/runs/r1/state/"):
        request = urllib.request.Request(  # noqa: S310  (loopback test server)
            f"{daphne.url}{path}", headers={"Cookie": NUL_SESSION, "Accept": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310
        assert refused.value.code == 400, (path, refused.value.code)
        assert json.loads(refused.value.read())["error"].startswith("cookie: contains a NUL")
    for path in ("/ws/runs/", "/ws/runs/r1/"):
        with pytest.raises(InvalidStatus) as closed:
            connect(f"{daphne.ws_url}{path}", open_timeout=10,
                    additional_headers={"Cookie": NUL_SESSION, "Origin": daphne.url})
        assert closed.value.response.status_code == 403, path
    log = daphne.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "ERROR" not in log


# -- webhook targets that carry a private IPv4 address inside an IPv6 one ---------------------
EMBEDDED_PRIVATE = [
    "http://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 (RFC 6052) to 169.254.169.254, the metadata
    "http://[64:ff9b::7f00:1]/hook",  # NAT64 to 127.0.0.1
    "http://[64:ff9b:1::a00:1]/hook",  # local-use NAT64 (RFC 8215)
    "http://[2002:a00:1::1]/hook",  # 6to4 of 10.0.0.1
    "http://[::7f00:1]/hook",  # IPv4-compatible 127.0.0.1
    "http://[::ffff:0:a00:1]/hook",  # SIIT (IPv4-translated) 10.0.0.1
]


@pytest.fixture
def webhooks(settings, generator) -> Iterator[None]:
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    settings.WEBHOOKS_CONNECT_TIMEOUT_S = 1.0
    settings.WEBHOOKS_READ_TIMEOUT_S = 0.5
    settings.WEBHOOKS_BACKOFF_BASE_S = 0.05
    subscriptions_cache_clear()
    yield
    subscriptions_cache_clear()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("url", EMBEDDED_PRIVATE)
def test_ipv6_forms_of_private_addresses_are_refused_when_saved(webhooks, url: str):
    with pytest.raises(CommandError, match=r"^url: .*WEBHOOKS_ALLOW_PRIVATE"):
        call_command("webhook_add", url, "--events", "run_started")
    assert not Subscription.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_url_saved_before_the_rule_is_refused_when_sent(webhooks):
    """Rows as an older server stored them: the send re-checks the URL, connects nowhere and
    fails the delivery for good, naming the setting (not retried against the address)."""
    for url in EMBEDDED_PRIVATE:
        Subscription.objects.create(url=url, events=["run_started"], secret="whsec_old")
    run_start(workflow_name="Generator", enterprise_id="acme")
    deadline = time.monotonic() + 15
    while Delivery.objects.filter(attempts=0).exists():
        assert time.monotonic() < deadline, "deliveries not tried"
        deliveries_drain(budget_s=2.0)
    deliveries = list(Delivery.objects.select_related("subscription"))
    assert len(deliveries) == len(EMBEDDED_PRIVATE)
    for delivery in deliveries:
        assert (delivery.status, delivery.attempts) == (Delivery.Status.FAILED, 1), (
            delivery.subscription.url, delivery.last_error
        )
        assert "WEBHOOKS_ALLOW_PRIVATE" in delivery.last_error


class GarbledReceiver:
    """A receiver answering every request with a status line that carries a carriage return
    and a terminal escape (http.client refuses it, quoting it in its error)."""

    ANSWER = b"HTTP/1.1 2OO\r2026-11-27 23:59:59,000 ERROR forged\x1b[2J\r\n\r\n"

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                connection.sendall(self.ANSWER)


@pytest.mark.django_db(transaction=True)
def test_a_receiver_cannot_write_lines_into_the_log_through_its_errors(webhooks, settings,
                                                                      caplog):
    settings.WEBHOOKS_ALLOW_PRIVATE = True  # the receiver is on loopback
    receiver = GarbledReceiver()
    try:
        call_command("webhook_add", f"http://127.0.0.1:{receiver.port}/hook",
                     "--events", "run_started", stdout=io.StringIO())
        run_start(workflow_name="Generator", enterprise_id="acme")
        with caplog.at_level(logging.INFO, logger="runs.webhooks"):
            deliveries_drain(budget_s=5.0)
    finally:
        receiver.server.close()
    delivery = Delivery.objects.get()
    assert delivery.attempts >= 1 and "forged" in delivery.last_error
    logged = [r.getMessage() for r in caplog.records if "forged" in r.getMessage()]
    assert logged
    for text in (delivery.last_error, *logged):
        assert not any(c in text for c in "\r\n\x1b"), repr(text)
