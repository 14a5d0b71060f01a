"""Inspector sockets that keep dropping and resuming with ``?after=<last seq>`` during a
2,000-event run receive every event exactly once and in order."""

from __future__ import annotations

import random

import pytest

from tests.reliability.helpers import Inspector, RecordingReporter, http_json, varied_events

EVENTS = 2_000
INSPECTORS = 3


@pytest.mark.slow
def test_dropping_inspectors_see_every_event_once_in_order(sqlite_stack):
    stack = sqlite_stack
    server = stack.start_daphne()
    reporter = RecordingReporter(server.url, stack.secret, batch_size=20, flush_interval=60)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    inspectors = [
        Inspector(
            lambda: server.ws_url,
            run_id,
            stack.session,
            until=EVENTS,
            deadline_s=90,
            drop=random.Random(seed),  # each drops after 1..120 events, clean or cut
            drop_max=120,
        )
        for seed in range(INSPECTORS)
    ]
    try:
        for inspector in inspectors:
            inspector.start()
        for inspector in inspectors:
            assert inspector.connected.wait(10), inspector.errors
        for event in varied_events(EVENTS):
            reporter.event(**event)
        reporter.close()
        for inspector in inspectors:
            inspector.finish(timeout=90)
    finally:
        for inspector in inspectors:
            inspector.stop_flag.set()
            inspector.join(timeout=5)

    status, latest = http_json("GET", f"{server.url}/api/runs/{run_id}/state/", token=stack.secret)
    assert status == 200 and latest["seq"] == EVENTS
    for inspector in inspectors:
        assert inspector.errors == []
        assert inspector.seqs == list(range(1, EVENTS + 1))
        assert inspector.drops >= EVENTS // 120  # it really kept dropping
        assert inspector.connects == inspector.drops + 1
        assert inspector.context == latest["state"]["context"]
