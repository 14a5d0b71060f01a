"""``Outages``: one warning when a server goes, one when it is back, naming how many runs of the
process waited; each run counted once per outage."""

from __future__ import annotations

import logging

import pytest
from contextadmin_sdk.client.outages import Outages

SERVER = "http://127.0.0.1:9"


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_a_run_that_meets_the_outage_again_while_it_ends_is_counted_once(caplog):
    outages = Outages()
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        outages.met(server=SERVER, run_id="a", error=ConnectionRefusedError("refused"))
        outages.met(server=SERVER, run_id="b", error=ConnectionRefusedError("refused"))
        outages.passed(server=SERVER, run_id="a")
        outages.met(server=SERVER, run_id="a", error=ConnectionResetError("reset"))  # again
        outages.passed(server=SERVER, run_id="b")
        assert not any("reachable again" in line for line in _lines(caplog))  # a still waits
        outages.passed(server=SERVER, run_id="a")
    lines = _lines(caplog)
    assert [line for line in lines if "server unavailable" in line] == [
        "run a: server unavailable (refused); retrying in the background, the chat goes on "
        "(other runs of this process that meet it are counted, not logged)"
    ]
    (back,) = [line for line in lines if "reachable again" in line]
    assert back.startswith("run a: server reachable again after ")
    assert back.endswith("(2 runs of this process waited for it)")


def test_a_run_that_leaves_while_waiting_does_not_hold_the_end_back(caplog):
    outages = Outages()
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        outages.met(server=SERVER, run_id="a", error=ConnectionRefusedError("refused"))
        outages.met(server=SERVER, run_id="b", error=ConnectionRefusedError("refused"))
        outages.left(server=SERVER, run_id="b")  # closed before the server came back
        outages.passed(server=SERVER, run_id="a")
    (back,) = [line for line in _lines(caplog) if "reachable again" in line]
    assert back.endswith("(2 runs of this process waited for it)")
