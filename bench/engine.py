"""Pure-engine figures: database variables over MongoDB (B6), derived triggers (B7)."""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymongo import MongoClient, monitoring

from bench import configs
from bench.stats import Rates, Timings

perf = time.perf_counter
HANDSHAKE = frozenset({"hello", "ismaster", "isMaster", "ping", "endSessions", "buildinfo"})


# -- B6: build_context with database variables ------------------------------------------------
class RoundTrips(monitoring.CommandListener):
    """Count the commands a client sends (one command is one round trip), handshakes aside."""

    def __init__(self) -> None:
        self.count = 0

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in HANDSHAKE:
            self.count += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@dataclass
class Lookups:
    variables: int
    collections: int
    round_trips: int
    naive_round_trips: int
    resolved: int
    timings: Timings
    naive: Timings


def _per_variable_loop(config: Any, client: MongoClient[Any], enterprise_id: str) -> int:
    """The baseline: one ``find_one`` per variable (what a naive loader does)."""
    from contextadmin_sdk.engine.mongo import fetch_database_variables

    resolved = 0
    default = config.context_variables.database_name
    for variable in config.context_variables.database_variables:
        found = fetch_database_variables(
            client, [variable], enterprise_id=enterprise_id, default_database=default
        )
        resolved += found[variable.name].status == "resolved"
    return resolved


def b6_build_context(*, variables: int, collections: int, reps: int) -> Lookups:
    from contextadmin_sdk.engine import build_context
    from contextadmin_sdk.engine.format import parse_config
    from contextadmin_sdk.engine.mongo import mongo_client

    from devservers.mongo import MongoServer

    enterprise_id = "bench-enterprise"
    config = parse_config(configs.database_document(variables, collections)).config
    with tempfile.TemporaryDirectory(prefix="bench-nx27017-") as workdir:
        server = MongoServer(Path(workdir)).start()
        try:
            server.seed(configs.database_documents(variables, collections, enterprise_id))
            listener = RoundTrips()
            client = mongo_client(server.uri, event_listeners=[listener])
            client.admin.command("ping")
            environ = {"ENVIRONMENT": "development"}

            def build() -> Any:
                return build_context(
                    config,
                    workflow_name="Bench",
                    enterprise_id=enterprise_id,
                    environ=environ,
                    mongo=client,
                )

            build()  # warm: connection pool, server caches
            listener.count = 0
            context = build()
            round_trips = listener.count
            database = {
                name: entry
                for name, entry in context.provenance.items()
                if entry["category"] == "database"
            }
            resolved = sum(1 for entry in database.values() if entry["status"] == "resolved")
            if resolved != variables:
                unresolved = [n for n, e in database.items() if e["status"] != "resolved"]
                raise AssertionError(f"B6: {len(unresolved)} unresolved, e.g. {unresolved[:3]}")
            listener.count = 0
            naive_resolved = _per_variable_loop(config, client, enterprise_id)
            naive_round_trips = listener.count
            assert naive_resolved == variables, naive_resolved
            samples, naive = [], []
            for _ in range(reps):
                began = perf()
                build()
                samples.append(perf() - began)
                began = perf()
                _per_variable_loop(config, client, enterprise_id)
                naive.append(perf() - began)
            client.close()
        finally:
            server.stop()
    return Lookups(
        variables,
        collections,
        round_trips,
        naive_round_trips,
        resolved,
        Timings(tuple(samples)),
        Timings(tuple(naive)),
    )


# -- B7: derived trigger evaluation -----------------------------------------------------------
def trigger_events(count: int, *, agents: int = 50, tools: int = 20, seed: int = 7) -> list[dict]:
    """A stream of run events: mostly chat, some tool responses, rare matching texts."""
    rng = random.Random(seed)
    texts = ["Thinking about it.", "Here is the draft.", "  ok  ", "Could you clarify?", "NEXT"]
    events: list[dict[str, Any]] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.8:
            k = rng.randrange(1000)
            text = f"approved {k}" if rng.random() < 0.01 else rng.choice(texts)
            events.append(
                {"type": "agent_text", "agent": f"Agent{rng.randrange(agents)}", "text": text}
            )
        else:
            k = rng.randrange(1000)
            status = f"done_{k}" if rng.random() < 0.01 else "success"
            events.append(
                {"type": "tool_response", "tool": f"tool_{rng.randrange(tools)}", "status": status}
            )
    return events


class NaiveScan:
    """The baseline: test every trigger of every derived variable against each event."""

    def __init__(self, config: Any) -> None:
        from contextadmin_sdk.engine.derived import TRIGGER_LOADERS

        self.triggers = [
            (variable.name, index, TRIGGER_LOADERS[spec.type].from_spec(spec))
            for variable in config.context_variables.derived_variables
            for index, spec in enumerate(variable.triggers)
        ]
        self.turn_counts: dict[str, int] = {}

    def observe(self, event: Mapping[str, Any], values: dict[str, Any]) -> list[str]:
        from contextadmin_sdk.engine.derived import _event_key

        type_, key = event.get("type"), _event_key(event)
        if type_ == "agent_text" and key is not None:
            self.turn_counts[key] = self.turn_counts.get(key, 0) + 1
        flipped = []
        for name, _index, trigger in self.triggers:
            if trigger.event_type != type_ or trigger.key != key or values.get(name) is True:
                continue
            if trigger.matches(event, turn_counts=self.turn_counts):
                values[name] = True
                flipped.append(name)
        return flipped


@dataclass
class Triggers:
    triggers: int
    events: int
    rates: Rates
    naive: Rates
    flips: int
    naive_flips: int


def _fresh_manager(config: Any) -> Iterator[Any]:
    from contextadmin_sdk.engine import DerivedContextManager

    while True:
        yield DerivedContextManager(config)


def b7_triggers(*, triggers: int, events: int, naive_events: int, reps: int) -> Triggers:
    import logging

    from contextadmin_sdk.engine import DerivedContextManager
    from contextadmin_sdk.engine.format import parse_config

    # as in production: no INFO
    logging.getLogger("contextadmin_sdk.engine").setLevel(logging.WARNING)
    config = parse_config(configs.derived_document(triggers)).config
    count = sum(len(v.triggers) for v in config.context_variables.derived_variables)
    assert count == triggers, count
    stream = trigger_events(events)
    rates, naive_rates = [], []
    flips = naive_flips = 0
    for _ in range(reps):
        manager = DerivedContextManager(config)
        values: dict[str, Any] = manager.defaults()
        began = perf()
        total = 0
        for item in stream:
            total += len(manager.observe(item, values))
        rates.append(len(stream) / (perf() - began))
        flips = total
        scan = NaiveScan(config)
        values = scan_values = {name: False for name, _, _ in scan.triggers}
        began = perf()
        total = 0
        for item in stream[:naive_events]:
            total += len(scan.observe(item, scan_values))
        naive_rates.append(naive_events / (perf() - began))
        naive_flips = total
    # Same answers on the same prefix: the index changes the cost, never the flips.
    manager = DerivedContextManager(config)
    indexed_values = manager.defaults()
    scan = NaiveScan(config)
    scan_values = {name: False for name, _, _ in scan.triggers}
    for item in stream[:naive_events]:
        got = [flip.name for flip in manager.observe(item, indexed_values)]
        want = scan.observe(item, scan_values)
        if sorted(got) != sorted(want):
            raise AssertionError(f"B7: indexed flips {got} != naive {want} for {item}")
    return Triggers(
        triggers, len(stream), Rates(tuple(rates)), Rates(tuple(naive_rates)), flips, naive_flips
    )
