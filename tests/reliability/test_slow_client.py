"""A client that stops reading its inspector socket cannot make Daphne's memory grow without
limit: Daphne pings a socket that has been silent for ``--ping-interval`` seconds and aborts it
when no pong comes within ``--ping-timeout`` (autobahn's abort discards the unsent buffer). So
a stalled client costs at most what the run emits in about ping-interval + ping-timeout; once it
is cut off it costs nothing, however much the run goes on to emit. (The channel-layer side of
the bound, ``capacity`` messages per stalled consumer, is in test_channel_layer.py.)"""

from __future__ import annotations

import time

import pytest

from tests.reliability.helpers import RecordingReporter, rss_bytes, silent_inspector

PING_INTERVAL_S = 1
PING_TIMEOUT_S = 2
TEXT = "x" * 8_000  # ~8 kB per event: megabytes per second through one socket
MB = 1024 * 1024


@pytest.mark.slow
def test_a_client_that_stops_reading_is_cut_off_and_costs_nothing_after(sqlite_stack):
    stack = sqlite_stack
    server = stack.start_daphne(
        args=("--ping-interval", str(PING_INTERVAL_S), "--ping-timeout", str(PING_TIMEOUT_S))
    )
    assert server.process is not None
    reporter = RecordingReporter(server.url, stack.secret, batch_size=50, flush_interval=60)
    run_id = reporter.start(workflow="Generator", enterprise_id="acme")
    stalled = silent_inspector(server.port, run_id, stack.session)
    disconnected = f"WSDISCONNECT /ws/runs/{run_id}/"
    try:
        started = time.monotonic()
        sent = 0
        while disconnected not in stack.logs():  # produce until Daphne cuts the client off
            assert time.monotonic() - started < PING_INTERVAL_S + PING_TIMEOUT_S + 10
            for _ in range(50):
                reporter.event("agent_text", agent="writer", text=f"{sent} {TEXT}")
                sent += 1
        cut_after = time.monotonic() - started
        assert cut_after < PING_INTERVAL_S + PING_TIMEOUT_S + 4
        at_cut = rss_bytes(server.process.pid)

        produced_before = sent * len(TEXT)
        target = sent * 2
        while sent < target:  # as much again, with the stalled client gone
            reporter.event("agent_text", agent="writer", text=f"{sent} {TEXT}")
            sent += 1
        reporter.close()
        produced_after = (sent - target // 2) * len(TEXT)
        growth = rss_bytes(server.process.pid) - at_cut
        assert produced_after >= produced_before
        assert growth < max(16 * MB, produced_after // 4), (
            f"Daphne grew {growth / MB:.0f} MB while {produced_after / MB:.0f} MB went out "
            "with no client reading"
        )
    finally:
        stalled.close()
