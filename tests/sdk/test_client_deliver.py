"""A run that ended while the server was away reaches it from its spool, the documented way
(``RunReporter.deliver``, ``python -m contextadmin_sdk.client deliver``), against a live
Daphne that never saw the run: nothing lost, the run completed there."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from contextadmin_sdk.client import RunReporter

from devservers.processes import PROJECT, free_port
from tests.sdk.test_client_transports import TRANSPORTS, reporter_for, stored_events, texts

pytestmark = pytest.mark.slow


def run_while_away(token: str, spool_dir: Path, *, transport: str = "http") -> str:
    """A run reported, start to end, to a server that is not there (a closed port): its spool
    holds it all."""
    away = reporter_for(f"http://127.0.0.1:{free_port()}", token, transport, spool_dir=spool_dir)
    run_id = away.start(workflow="Generator", enterprise_id="acme")
    for i in range(30):
        away.event("agent_text", agent="a", text=str(i))
    away.event("run_status", status="completed")
    assert away.close(timeout=0.3) is False
    return run_id


def ended_on(site, token: str, run_id: str) -> str:
    return str(RunReporter(site.url, token).fetch_state(run_id)["state"]["execution"]["status"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_deliver_sends_a_spooled_run_the_server_never_saw_and_ends_it(
    generator_site, transport, tmp_path, caplog
):
    site, token = generator_site
    run_id = run_while_away(token, tmp_path, transport=transport)
    spool = tmp_path / f"{run_id}.jsonl"
    reporter = RunReporter(site.url, token, spool_dir=tmp_path, transport=transport)
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk.client"):
        assert reporter.deliver(run_id, timeout=20) is True
    assert reporter.transport_in_use == transport
    events = stored_events(site, token, run_id)
    assert [event["seq"] for event in events] == list(range(1, 32))
    assert texts(events) == [str(i) for i in range(30)]
    assert ended_on(site, token, run_id) == "completed"
    assert not spool.exists()  # ended and acknowledged
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"run {run_id}")]
    assert said[-1] == (
        f"run {run_id}: 31 spooled events delivered; the run is completed on the server"
    )
    # Delivered again (the file is gone, the server has it all): nothing to send, no error.
    assert RunReporter(site.url, token, spool_dir=tmp_path).deliver(run_id, timeout=5) is True


def test_deliver_needs_a_spool_dir_and_a_fresh_reporter(generator_site, tmp_path):
    site, token = generator_site
    with pytest.raises(ValueError, match=r"^spool_dir: "):
        RunReporter(site.url, token).deliver("r1")
    reporter = RunReporter(site.url, token, spool_dir=tmp_path)
    reporter.start(workflow="Generator", enterprise_id="acme")
    with pytest.raises(ValueError, match="already reports run"):
        reporter.deliver("r1")
    reporter.close()


def deliver_command(*args: str, url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextadmin_sdk.client", "deliver", *args],
        capture_output=True, text=True, timeout=120, cwd=PROJECT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}",
             "CONTEXTADMIN_URL": url, "CONTEXTADMIN_TOKEN": token},
    )


def test_the_deliver_command_sends_the_spool_the_close_message_names(
    generator_site, tmp_path, caplog
):
    site, token = generator_site
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        run_id = run_while_away(token, tmp_path)
    spool = tmp_path / f"{run_id}.jsonl"
    (told,) = [r.getMessage() for r in caplog.records if "not acknowledged" in r.getMessage()]
    assert f"python -m contextadmin_sdk.client deliver {spool}" in told, told
    done = deliver_command(str(spool), url=site.url, token=token)
    assert done.returncode == 0, done.stderr
    assert "31 spooled events delivered; the run is completed on the server" in done.stderr
    assert texts(stored_events(site, token, run_id)) == [str(i) for i in range(30)]
    assert ended_on(site, token, run_id) == "completed" and not spool.exists()
    missing = deliver_command(str(spool), url=site.url, token=token)
    assert missing.returncode == 2 and "SPOOL_FILE: " in missing.stderr, missing.stderr
    assert "no such file" in missing.stderr
    wrong = deliver_command(str(spool), url=site.url + "/api", token=token)
    assert wrong.returncode == 2 and "base_url: " in wrong.stderr, wrong.stderr
