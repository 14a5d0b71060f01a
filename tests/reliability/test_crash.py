"""Daphne killed with SIGKILL in the middle of a stream of events, then restarted on the same
database: nothing acknowledged is lost, nothing is stored twice, and the state the inspector
showed is the state replay rebuilds."""

from __future__ import annotations

import threading
import time

import pytest

from runs.engine.state import NAMESPACES
from tests.reliability.helpers import (
    Inspector,
    RecordingReporter,
    TcpProxy,
    dump_run,
    http_json,
    varied_events,
    wait_until,
)

EVENTS = 600
BATCH = 10
KILL_AFTER_SEQ = 200


@pytest.mark.slow
def test_kill_9_mid_stream_keeps_every_acknowledged_event_exactly_once(sqlite_stack):
    stack = sqlite_stack
    first = stack.start_daphne()
    # The runtime and the inspector reach Daphne through a proxy, so that one response can be
    # swallowed: that batch is committed, but the runtime never hears so and must retry it.
    proxy = TcpProxy(first.port).start()
    inspector: Inspector | None = None
    try:
        # Default retries (8, backoff 0.1 s doubling to 5 s: ~16 s) outlast a restart.
        reporter = RecordingReporter(proxy.url, stack.secret, batch_size=BATCH, flush_interval=60)
        run_id = reporter.start(workflow="Generator", enterprise_id="acme")
        sample = {1, 137, 250, 499, 500, 501, EVENTS - 1}
        inspector = Inspector(
            lambda: proxy.ws_url, run_id, stack.session, until=EVENTS, deadline_s=90, sample=sample
        )
        inspector.start()
        assert inspector.connected.wait(10), inspector.errors

        events = varied_events(EVENTS)
        failures: list[BaseException] = []

        def stream() -> None:
            try:
                for event in events:
                    reporter.event(**event)
                reporter.close()
            except BaseException as exc:
                failures.append(exc)

        writer = threading.Thread(target=stream, daemon=True)
        writer.start()
        assert wait_until(lambda: reporter.last_acked_seq >= KILL_AFTER_SEQ, timeout=30)

        killed_at: list[int] = []

        def kill() -> None:  # runs when Daphne has answered (committed) an events POST
            killed_at.append(reporter.last_acked_seq)
            first.kill()  # SIGKILL: no shutdown, no flushing, no goodbye to any socket

        proxy.arm(kill)
        assert proxy.swallowed.wait(30), "no events POST went through the proxy"
        time.sleep(0.3)  # the runtime's retries and the inspector's reconnects hit a dead server
        second = stack.start_daphne()
        proxy.upstream_port = second.port

        writer.join(timeout=60)
        assert not writer.is_alive() and not failures, failures
        inspector.finish(timeout=60)

        # The runtime: every event acknowledged; the swallowed batch was re-sent and the server
        # acknowledged it as already stored (not stored again).
        assert reporter.last_acked_seq == EVENTS
        duplicates = [
            ack["seq"]
            for a in reporter.answers
            for ack in a.get("acks", [])
            if ack.get("duplicate")
        ]
        assert duplicates, "the swallowed batch was not retried"
        assert len(duplicates) == BATCH and duplicates[0] > killed_at[0]

        # The log: seqs 1..N once each, each with the payload the runtime sent.
        log = dump_run(stack.env, run_id)
        assert log["last_seq"] == EVENTS
        assert [seq for seq, _ in log["events"]] == list(range(1, EVENTS + 1))
        assert [payload for _, payload in log["events"]] == [
            {**event, "seq": seq} for seq, event in enumerate(events, start=1)
        ]
        assert log["replayed_equals_live"], "replaying the whole log differs from run.state"

        # The inspector: every event once, in order, across the crash; and what it showed is
        # what the server rebuilds by replay (?at=N) and holds live (no ?at).
        assert inspector.errors == []
        assert inspector.seqs == list(range(1, EVENTS + 1))
        assert inspector.connects >= 2
        status, latest = http_json(
            "GET", f"{second.url}/api/runs/{run_id}/state/", token=stack.secret
        )
        assert status == 200 and latest["seq"] == EVENTS
        assert latest["state"] == {k: log["live"][k] for k in NAMESPACES}
        assert inspector.context == latest["state"]["context"]
        for seq in sorted(sample):
            status, body = http_json(
                "GET", f"{second.url}/api/runs/{run_id}/state/?at={seq}", token=stack.secret
            )
            assert status == 200, body
            assert body["state"]["context"] == inspector.contexts_at[seq], seq
    finally:
        if inspector is not None:
            inspector.stop_flag.set()
            inspector.join(timeout=5)
        proxy.stop()
