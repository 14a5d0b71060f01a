"""The spool file: every line in the OS before ``write`` returns (a SIGKILL right after loses
none), readers stop at the last complete line, reopening appends after it, and a full disk ends
the spooling, not the run's reporting."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from contextadmin_sdk.client import ReportError, RunReporter
from contextadmin_sdk.client.__main__ import main as client_main
from contextadmin_sdk.client.resume import spool_read
from contextadmin_sdk.client.spool_file import (
    CHUNK_BYTES,
    SpoolFile,
    SpoolInUse,
    events_after,
    spool_in_use,
)

from devservers.processes import PROJECT, free_port
from tests.sdk.integrations.fake_server import FakeRunServer


def line(seq: int, text: str = "x") -> bytes:
    return json.dumps({"event": {"type": "agent_text", "agent": "a", "text": text, "seq": seq}})\
        .encode() + b"\n"


def seqs(path: Path) -> list[int]:
    return [event["seq"] for event in spool_read(path).events]


def test_lines_are_readable_while_open_and_close_cuts_the_reserved_space(tmp_path):
    path = tmp_path / "run.jsonl"
    spool = SpoolFile(path, append=False)
    written = b"".join(line(seq) for seq in range(1, 51))
    for seq in range(1, 51):
        spool.write(line(seq))
    assert spool.tell() == len(written)
    assert seqs(path) == list(range(1, 51))  # a reader while the runtime still writes
    spool.close()
    assert path.read_bytes() == written  # nothing past the last line once closed


def test_lines_cross_chunks_and_a_line_larger_than_a_chunk_keeps_its_place(tmp_path):
    path = tmp_path / "run.jsonl"
    spool = SpoolFile(path, append=False)
    lines = [line(seq, "y" * (seq % 700)) for seq in range(1, 800)]
    assert sum(len(each) for each in lines) > 3 * CHUNK_BYTES  # several chunks are taken
    lines.insert(400, line(10_000, "z" * (2 * CHUNK_BYTES)))  # written directly, in order
    for each in lines:
        spool.write(each)
    spool.close()
    assert path.read_bytes() == b"".join(lines)


WRITER = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from contextadmin_sdk.client.spool_file import SpoolFile
    spool = SpoolFile(Path(sys.argv[1]), append=False)
    for seq in range(1, int(sys.argv[2]) + 1):
        event = {"type": "agent_text", "agent": "a", "text": "t" * 90, "seq": seq}
        spool.write(json.dumps({"event": event}).encode() + b"\\n")
    os.kill(os.getpid(), signal.SIGKILL)  # right after the last write returned
    """
)


def test_a_sigkill_right_after_write_loses_no_line_and_a_reopened_spool_appends_after_them(
    tmp_path,
):
    path = tmp_path / "run.jsonl"
    count = 1_500  # past the first chunk
    process = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), str(count)],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}"},
        capture_output=True,
        timeout=60,
    )
    assert process.returncode == -9, process.stderr.decode()[-2000:]
    assert seqs(path) == list(range(1, count + 1))
    assert path.read_bytes().endswith(b"\0")  # the killed writer's reserved space is left

    spool = SpoolFile(path, append=True)  # as resume does: after the last complete line
    spool.write(line(count + 1))
    spool.close()
    assert seqs(path) == list(range(1, count + 2))
    assert b"\0" not in path.read_bytes()


def test_a_torn_last_line_is_dropped_when_the_spool_is_reopened(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(line(1) + line(2) + line(3)[:20])  # died mid-line
    spool = SpoolFile(path, append=True)
    spool.write(line(3))
    spool.close()
    assert path.read_bytes() == line(1) + line(2) + line(3)


def test_events_after_reads_back_in_order_and_stops_at_the_writers_end(tmp_path):
    path = tmp_path / "run.jsonl"
    spool = SpoolFile(path, append=False)
    spool.write(line(1))
    offset = spool.tell()
    for seq in range(2, 8):
        spool.write(line(seq))
    events, after = events_after(path, offset, end=spool.tell(), most=4)
    assert [event["seq"] for event in events] == [2, 3, 4, 5] and after is not None
    events, after = events_after(path, after, end=spool.tell(), most=4)
    assert [event["seq"] for event in events] == [6, 7] and after is None  # caught up
    spool.close()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 32 KiB filesystem (tmpfs), so a spool fills it."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_ends_the_spooling_not_the_reporting(tiny_disk, caplog):
    fake = FakeRunServer()  # down until started
    reporter = RunReporter(
        fake.url, "ca_x", background=True, backoff=0.02, max_backoff=0.1, transport="http",
        spool_dir=tiny_disk, capacity=10_000,
    )
    reporter.start(workflow="W", enterprise_id="e", run_id=uuid.uuid4().hex)
    with caplog.at_level(logging.ERROR, logger="contextadmin_sdk.client"):
        for index in range(400):  # about 40 KB of lines: more than the disk holds
            reporter.event("agent_text", agent="a", text=f"{index:03d} " + "w" * 80)
    failures = [
        record.getMessage() for record in caplog.records
        if "could not write the spool" in record.getMessage()
    ]
    assert len(failures) == 1 and "kept in memory only" in failures[0]
    assert reporter.dropped == 0 and reporter.error is None
    kept = seqs(tiny_disk / f"{reporter.run_id}.jsonl")
    assert 0 < len(kept) < 400 and kept == list(range(1, len(kept) + 1))  # what fitted, in order
    fake.start()
    try:
        reporter.event("run_status", status="completed")
        assert reporter.close(timeout=10) is True
        assert fake.seqs(reporter.run_id) == list(range(1, 402))  # every event, none lost
    finally:
        fake.stop()


def test_an_open_spool_is_refused_to_a_second_writer_until_it_is_closed(tmp_path):
    path = tmp_path / "run.jsonl"
    first = SpoolFile(path, append=False)
    first.write(line(1))
    assert spool_in_use(path)
    with pytest.raises(SpoolInUse, match="being written by a live runtime"):
        SpoolFile(path, append=True)
    assert seqs(path) == [1]  # the refused open changed nothing
    first.close()
    assert not spool_in_use(path)
    second = SpoolFile(path, append=True)
    second.write(line(2))
    second.close()
    assert seqs(path) == [1, 2]


def test_a_live_spool_is_locked_against_the_flock_check_the_docs_give(tmp_path):
    """docs/ag2.md: a tool of the user's must not touch a live spool, and ``flock --nonblock
    FILE true`` tells it so (the runtime's ``flock`` is the one flock(1) takes)."""
    path = tmp_path / "run.jsonl"
    spool = SpoolFile(path, append=False)
    spool.write(line(1))
    check = ["flock", "--nonblock", str(path), "true"]
    assert subprocess.run(check, check=False).returncode != 0
    spool.close()
    assert subprocess.run(check, check=False).returncode == 0


LIVE_WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from contextadmin_sdk.client.spool_file import SpoolFile
    spool = SpoolFile(Path(sys.argv[1]), append=False)
    start = {"start": {"workflow": "W", "enterprise_id": "e", "run_id": Path(sys.argv[1]).stem}}
    spool.write(json.dumps(start).encode() + b"\\n")
    for seq in range(1, 11):
        spool.write(json.dumps({"event": {"type": "agent_text", "agent": "a", "text": "t",
                                          "seq": seq}}).encode() + b"\\n")
    print("WRITING", flush=True)
    sys.stdin.readline()  # the test delivers now, while this runtime still writes
    for seq in range(11, 21):
        spool.write(json.dumps({"event": {"type": "agent_text", "agent": "a", "text": "t",
                                          "seq": seq}}).encode() + b"\\n")
    spool.close()
    print("DONE", flush=True)
    """
)


def test_deliver_skips_a_spool_a_live_runtime_writes_and_the_runtime_goes_on(tmp_path, caplog):
    """``deliver var/spool/*.jsonl`` while a run is live: it cut the live spool's reserved
    space, and the runtime died of SIGBUS at its next line."""
    path = tmp_path / f"{uuid.uuid4().hex}.jsonl"
    writer = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(path)],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": f"{PROJECT / 'sdk'}:{PROJECT}"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "WRITING"
        before = path.read_bytes()
        fake = FakeRunServer().start()
        try:
            with caplog.at_level(logging.WARNING):
                code = client_main(argv=["deliver", str(path), "--url", fake.url, "--token", "x"])
            assert fake.requests == 0  # nothing sent for a run its runtime still reports
        finally:
            fake.stop()
        assert code == 0  # skipped, not failed
        assert any("skipped" in r.getMessage() and "live runtime" in r.getMessage()
                   for r in caplog.records)
        assert path.read_bytes() == before  # not cut, not appended to
        with pytest.raises(ReportError, match="live runtime"):  # nor resumed here
            RunReporter(fake.url, "x", spool_dir=tmp_path).resume(path.stem)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "DONE"
        assert writer.wait(timeout=30) == 0  # no SIGBUS
    finally:
        writer.kill()
    assert seqs(path) == list(range(1, 21))


def test_deliver_names_the_file_a_renamed_spool_must_have(tmp_path, capsys):
    run_id = uuid.uuid4().hex
    copy = tmp_path / "killed_copy.jsonl"
    start = {"start": {"workflow": "W", "enterprise_id": "e", "run_id": run_id}}
    copy.write_bytes(json.dumps(start).encode() + b"\n" + line(1))
    with pytest.raises(SystemExit) as exited:
        client_main(argv=["deliver", str(copy), "--url", "http://127.0.0.1:9", "--token", "x"])
    assert exited.value.code == 2
    said = capsys.readouterr().err
    assert f"holds run {run_id}" in said and f"{run_id}.jsonl" in said


def test_resuming_from_a_spool_while_the_server_is_away_asks_it_twice_not_for_the_backoff(
    tmp_path, caplog
):
    """attach(run_id=) waits for the resume on the workflow's own loop: with the server down it
    blocked ~16 s through eight retries, a warning each, though the spool held the run."""
    away = f"http://127.0.0.1:{free_port()}"
    first = RunReporter(away, "ca_x", background=True, transport="http", spool_dir=tmp_path)
    run_id = first.start(workflow="W", enterprise_id="e")
    for index in range(5):
        first.event("agent_text", agent="a", text=str(index))
    first.close(timeout=0.1)
    again = RunReporter(
        away, "ca_x", background=True, transport="http", spool_dir=tmp_path, backoff=0.5
    )
    with caplog.at_level(logging.WARNING, logger="contextadmin_sdk.client"):
        began = time.monotonic()
        resumed = again.resume(run_id)
        spent = time.monotonic() - began
    again.close(timeout=0.1)
    assert [event["seq"] for event in resumed.unsent] == [1, 2, 3, 4, 5]
    assert spent < 2.0  # one retry after 0.5 s; the reporter's own 8 would take ~60 s here
    retried = [r for r in caplog.records if "/state/ failed" in r.getMessage()]
    assert len(retried) == 1
    assert any("rebuilding it from the spool" in r.getMessage() for r in caplog.records)
