"""Database variables against a real MongoDB-wire server (nx-27017), seed 000 step 6."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from typing import Any

import pytest
from bson import Decimal128, ObjectId
from contextadmin_sdk.engine import build_context, fetch_database_variables, json_safe, mongo_client
from pymongo import monitoring

from devservers.mongo import MongoServer, free_port

from .support import config_with, db_var, demo_config

OWNER = ObjectId("65f000000000000000000001")
CREATED = dt.datetime(2025, 1, 2, 3, 4, 5)
PROFILE = {
    "enterprise_id": "acme",
    "tenant": "t-9",
    "profile": {"plan": {"tier": "gold"}, "seats": [{"n": 1}, {"n": 2}]},
    "owner_id": OWNER,
    "created": CREATED,
    "count": 3,
}


@pytest.fixture(scope="module")
def mongo(mongo_server: MongoServer) -> MongoServer:
    mongo_server.seed(
        {
            "engine_tests": {
                "Profiles": [PROFILE, {**PROFILE, "enterprise_id": "globex", "count": 4}]
            },
            "billing": {"Plans": [{"enterprise_id": "acme", "plan": "enterprise"}]},
        }
    )
    return mongo_server


def build(config: Any, client: Any, enterprise_id: str = "acme", **environ: str) -> Any:
    return build_context(
        config, workflow_name="W", enterprise_id=enterprise_id, environ=environ, mongo=client
    )


@pytest.mark.parametrize(
    ("enterprise_id", "status", "value", "reason"),
    [
        pytest.param(
            "acme",
            "resolved",
            "Acme builds a marketplace that pairs freelance translators with publishers.",
            None,
            id="acme",
        ),
        pytest.param(
            "globex",
            "resolved",
            "Globex is an energy analytics platform for small utilities.",
            None,
            id="globex",
        ),
        pytest.param(
            "initech",
            "unresolved",
            None,
            "no document in autogen_ai_agents.Concepts with enterprise_id='initech'",
            id="no-document",
        ),
    ],
)
@pytest.mark.mongo
def test_demo_workflow_lookup(
    mongo: MongoServer, enterprise_id: str, status: str, value: Any, reason: str | None
) -> None:
    ctx = build(demo_config(), mongo.client, enterprise_id)
    assert ctx.provenance["concept_overview"] == {
        "category": "database",
        "source": "db.autogen_ai_agents.Concepts.ConceptOverview",
        "status": status,
        "reason": reason,
    }
    assert ctx.values.get("concept_overview") == value


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("profile.plan.tier", "gold", id="dotted-path"),
        pytest.param("profile.seats.1.n", 2, id="list-index"),
        pytest.param("profile.seats", [{"n": 1}, {"n": 2}], id="sub-document-list"),
        pytest.param("owner_id", "65f000000000000000000001", id="object-id-as-str"),
        pytest.param("created", "2025-01-02T03:04:05", id="datetime-as-iso"),
        pytest.param("count", 3, id="integer"),
    ],
)
@pytest.mark.mongo
def test_field_paths_and_json_safe_values(mongo: MongoServer, field: str, value: Any) -> None:
    config = config_with(
        database_name="engine_tests", database_variables=[db_var("item", "Profiles", field)]
    )
    ctx = build(config, mongo.client)
    assert ctx.provenance["item"]["status"] == "resolved", ctx.provenance["item"]
    assert ctx.values["item"] == value


@pytest.mark.parametrize(
    ("field", "reason"),
    [
        pytest.param(
            "missing",
            "no field missing in the engine_tests.Profiles document with enterprise_id='acme'",
            id="missing-top-level",
        ),
        pytest.param(
            "profile.plan.color",
            "no field profile.plan.color in the engine_tests.Profiles document "
            "with enterprise_id='acme'",
            id="missing-nested",
        ),
        pytest.param(
            "profile.seats.7.n",
            "no field profile.seats.7.n in the engine_tests.Profiles document "
            "with enterprise_id='acme'",
            id="index-out-of-range",
        ),
    ],
)
@pytest.mark.mongo
def test_missing_fields_are_unresolved_with_the_reason(
    mongo: MongoServer, field: str, reason: str
) -> None:
    config = config_with(
        database_name="engine_tests", database_variables=[db_var("item", "Profiles", field)]
    )
    ctx = build(config, mongo.client)
    assert "item" not in ctx.values
    assert ctx.provenance["item"]["status"] == "unresolved"
    assert ctx.provenance["item"]["reason"] == reason


@pytest.mark.mongo
def test_a_value_holding_a_nul_is_unresolved_with_the_reason(mongo: MongoServer) -> None:
    """BSON strings may hold NUL; no database the server stores a run in can (PostgreSQL
    refused every run start of that enterprise with a 500)."""
    mongo.seed({"nul_tests": {"Notes": [
        {"enterprise_id": "acme", "note": "a\x00b", "nested": {"k": ["x\x00"]}, "fine": "ok"},
    ]}})
    config = config_with(database_name="nul_tests", database_variables=[
        db_var("note", "Notes", "note"), db_var("nested", "Notes", "nested"),
        db_var("fine", "Notes", "fine"),
    ])
    ctx = build(config, mongo.client)
    assert ctx.values["fine"] == "ok"
    for name in ("note", "nested"):
        assert name not in ctx.values
        assert ctx.provenance[name]["status"] == "unresolved"
        assert "NUL character" in ctx.provenance[name]["reason"], ctx.provenance[name]


@pytest.mark.mongo
def test_per_variable_database_and_search_by(mongo: MongoServer) -> None:
    config = config_with(
        database_name="engine_tests",
        database_variables=[
            db_var("plan", "Plans", "plan", database_name="billing"),
            db_var("tier", "Profiles", "profile.plan.tier", search_by="tenant"),
        ],
    )
    ctx = build(config, mongo.client, "t-9")
    assert (
        ctx.provenance["plan"]["reason"] == "no document in billing.Plans with enterprise_id='t-9'"
    )
    assert ctx.values["tier"] == "gold"
    assert build(config, mongo.client).values["plan"] == "enterprise"


@pytest.mark.mongo
def test_type_mismatch_is_kept_with_a_warning(mongo: MongoServer) -> None:
    config = config_with(
        database_name="engine_tests",
        database_variables=[{**db_var("tier", "Profiles", "count"), "type": "string"}],
    )
    ctx = build(config, mongo.client)
    assert ctx.values["tier"] == 3
    assert ctx.warnings == [
        "tier: declared string but db.engine_tests.Profiles.count holds an integer; kept as is"
    ]
    # beside the value as well, where the run page and the preview show each variable's source
    assert ctx.provenance["tier"]["status"] == "resolved"
    assert ctx.provenance["tier"]["reason"] == (
        "declared string but db.engine_tests.Profiles.count holds an integer; kept as is"
    )


@pytest.mark.mongo
def test_schema_gating_skips_the_database(mongo: MongoServer) -> None:
    counter = CommandCounter()
    client = mongo_client(mongo.uri, event_listeners=[counter])
    try:
        ctx = build(demo_config(), client, CONTEXT_INCLUDE_SCHEMA="off")
    finally:
        client.close()
    assert ctx.provenance["concept_overview"]["status"] == "suppressed"
    assert counter.finds == []


class CommandCounter(monitoring.CommandListener):
    def __init__(self) -> None:
        self.finds: list[tuple[str, str]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "find":
            self.finds.append((event.database_name, event.command["find"]))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.mark.mongo
def test_one_round_trip_per_collection(mongo: MongoServer) -> None:
    """200 database variables over 5 collections cost at most 5 finds."""
    collections = [f"Wide{i}" for i in range(5)]
    mongo.seed(
        {
            "wide": {
                name: [
                    {"enterprise_id": "acme", **{f"f{j}": {"v": f"{name}-{j}"} for j in range(40)}}
                ]
                for name in collections
            }
        }
    )
    variables = [
        db_var(f"v_{c}_{j}".lower(), name, f"f{j}.v")
        for c, name in enumerate(collections)
        for j in range(40)
    ]
    counter = CommandCounter()
    client = mongo_client(mongo.uri, event_listeners=[counter])
    try:
        ctx = build(config_with(database_name="wide", database_variables=variables), client)
    finally:
        client.close()
    assert len(variables) == 200
    assert len(counter.finds) <= 5
    assert sorted(counter.finds) == [("wide", name) for name in collections]
    assert ctx.values["v_3_17"] == "Wide3-17"
    assert all(ctx.provenance[v["name"]]["status"] == "resolved" for v in variables)


def test_a_down_server_is_unresolved_within_the_timeout() -> None:
    timeout_ms = 500
    port = free_port()  # nothing listens there
    config = config_with(
        database_name="db",
        database_variables=[
            db_var(f"v{i}", f"C{i}", "x")
            for i in range(4)  # four groups: one wait, not four
        ],
    )
    client = mongo_client(f"mongodb://127.0.0.1:{port}", timeout_ms=timeout_ms)
    started = time.monotonic()
    try:
        ctx = build(config, client)
    finally:
        client.close()
    elapsed = time.monotonic() - started
    assert elapsed < 3 * timeout_ms / 1000, elapsed
    for index in range(4):
        entry = ctx.provenance[f"v{index}"]
        assert entry["status"] == "unresolved"
        assert entry["reason"].startswith("MongoDB unreachable: ")
        assert len(entry["reason"]) < 250
    assert set(ctx.values) == {
        "enterprise_id",
        "workflow_name",
        "context_aware",
        "monetization_enabled",
    }


def test_mongo_client_bounds_every_wait() -> None:
    client = mongo_client("mongodb://127.0.0.1:1", timeout_ms=1234)
    try:
        assert client.options.server_selection_timeout == pytest.approx(1.234)
        assert client.options.pool_options.connect_timeout == pytest.approx(1.234)
        assert client.options.pool_options.socket_timeout == pytest.approx(1.234)
    finally:
        client.close()


def test_no_mongo_configured() -> None:
    lookups = build(demo_config(), None).provenance["concept_overview"]
    assert (lookups["status"], lookups["reason"]) == ("unresolved", "no MongoDB configured")


@pytest.mark.mongo
def test_fetch_groups_by_database_collection_and_search_by(mongo: MongoServer) -> None:
    from contextadmin_sdk.engine.format import parse_config

    config = parse_config(
        config_with(
            database_name="engine_tests",
            database_variables=[
                db_var("a", "Profiles", "count"),
                db_var("b", "Profiles", "profile.plan.tier"),
                db_var("c", "Profiles", "profile.seats.0.n"),
                db_var("d", "Profiles", "count", search_by="tenant"),
            ],
        )
    ).config
    counter = CommandCounter()
    client = mongo_client(mongo.uri, event_listeners=[counter])
    try:
        lookups = fetch_database_variables(
            client,
            config.context_variables.database_variables,
            enterprise_id="acme",
            default_database="engine_tests",
        )
    finally:
        client.close()
    assert {name: lookup.value for name, lookup in lookups.items()} == {
        "a": 3,
        "b": "gold",
        "c": 1,
        "d": None,
    }
    assert len(counter.finds) == 2  # (Profiles, enterprise_id) and (Profiles, tenant)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (OWNER, "65f000000000000000000001"),
        (CREATED, "2025-01-02T03:04:05"),
        (dt.date(2025, 1, 2), "2025-01-02"),
        (Decimal128("1.50"), "1.50"),
        (b"\x00\x01", "AAE="),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (float("inf"), "inf"),
        ({"a": (1, OWNER), 2: None}, {"a": [1, "65f000000000000000000001"], "2": None}),
    ],
    ids=["objectid", "datetime", "date", "decimal128", "bytes", "uuid", "inf", "nested"],
)
def test_json_safe(value: Any, expected: Any) -> None:
    assert json_safe(value) == expected
