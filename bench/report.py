"""docs/benchmarks.md: the results table of one run, with the command that produced it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.machine import Machine

METHOD = """\
## Method

- Servers are real processes started with `devservers/processes.py`: Daphne with
  `DJANGO_DEBUG=0` on a temp-file SQLite database (WAL, `synchronous=NORMAL`), the in-memory
  channel layer with one Daphne, or the Redis layer of `REDIS_CHANNEL_LAYER` (`pubsub` by
  default; `--redis-layer lists` for channels_redis's list layer) on a throwaway
  `redis-server` with two Daphnes (B4: events POSTed to Daphne A; the B1 inspector on
  Daphne B; B3's 50 inspectors on Daphne B too; B2's two runtimes one per Daphne).
  The database is prepared with `manage.py migrate`, `demo_setup` (the Generator
  workflow), `create_api_token` and a staff session made with `Client.force_login`.
  `--postgres` runs everything on a throwaway PostgreSQL cluster (`devservers/postgres.py`)
  instead.
- Clients run in the bench process: `websockets` (asyncio client, no compression) and a small
  keep-alive HTTP/1.1 client (`bench/http.py`). Client and servers share the same two cores.
- Latency (B1, B3, B4) is measured from just before the request (or frame) that carried an
  event to the arrival of its `{"type": "event", "seq": ...}` message on each inspector socket
  (`/ws/runs/<id>/`, `Origin` + session cookie). The runtime produces 100 events/s on an
  absolute schedule (the demo run's events, cycled) and reports them as a runtime with a queue
  does: one `POST /api/runs/<id>/events/` at a time, carrying every event produced since the
  previous one began, which is one event per request while answers come within 10 ms. The
  line also gives the latency from each event's scheduled time (its wait in the queue
  included) and how many requests carried the events. Each repetition starts a new run, opens
  the sockets, waits 0.5 s, sends a warm-up, then the measured events; every socket must
  receive every seq exactly once and in order. Percentiles pool all repetitions' samples; the
  spread of per-repetition p99s is shown too.
- B1 is measured over both ingest paths in the same run on the same server: the events sent
  one per frame over `/ws/ingest/`, and as POSTs through Django's request handler and
  middleware (the only HTTP path). It also shows what bounds the HTTP figure: the same POST
  answered 401 by `runs.api` before any database access (Daphne + Django's handler,
  middleware and view).
- The baseline of B1/B3 is a bare `websockets` relay process (`bench/relay.py`): the producer
  sends the same-sized message over a websocket and the relay forwards it to the consumer
  sockets, with no parsing, database or channel layer.
- Throughput (B2) is measured per repetition (a new run each time) from the first request to
  the last response/ack; every event is committed before its response/ack. The median and the
  worst repetition are shown.
- B5 and B8 run in one Django process on their own temp database; B6 against `nx-27017`
  (MongoDB wire protocol over loopback TCP) with round trips counted by a pymongo
  `CommandListener`; B7 is the pure engine (no database), its flips checked against the naive
  scan's.
- B9 (`bench/ag2.py`) runs one scripted 1,000-turn AG2 0.14 group chat (two LLM-free agents,
  real speaker selection, two hand-off rules, derived triggers) five times per case,
  interleaved: without the adapter, and attached with a JSONL spool reporting to a Daphne
  (up), a closed port (down) and a stand-in answering every request after 200 ms in its own
  process (slow). The cost is the wall time (and the chat thread's CPU time) of each
  `session.observe` call that produced a run event. The sending runs on the reporter's thread
  and is not counted, except where it takes the GIL from the chat. B9 needs AG2 Classic (the
  `autogen` extra): without it the run prints B9 as skipped, with the command that installs it
  (`pip install "./sdk[autogen]"`), and still measures and writes the other figures.
- B9.ag2 (`bench/ag2x.py`) runs the same workflow on AG2 1.x in the same run, each 1.x run
  right after the Classic run of the same case: a workflow channel on an in-process hub (a
  human opens it; Asker and Answerer alternate through the `TransitionGraph` until
  `max_turns`), scripted with `ag2.testing.TestConfig`, the same config, each run on its own
  event loop. The cost is the wall time (and CPU time) of each observation hook of the session
  that produced a run event: the agent middleware's `turn_ended` / `tool_ended`, the hub
  listener's `envelope_posted` (a tool's `set_context`) and the adapter tap's `folded` (a
  hand-off, read inside the hub's fold since 2026-11-27; before, `envelope_posted` read it).
  Without the adapter the same graph runs with
  plain knobs and a listener that only waits for the channel to close. It runs in B9's loop,
  so it needs both extras (`ag2` and `autogen`).
- B10 and B11 (`bench/scale.py`) each run on their own fresh database and Daphne (in-memory
  layer). B10 POSTs one run's events in batches of 1,000 with `seq`, back to back, and at
  100,000 events (the baseline) and at 1,000,000 measures: the database's growth per event
  (SQLite: main file + WAL after a `wal_checkpoint(TRUNCATE)`, per table from `dbstat`;
  PostgreSQL: `pg_database_size`), `GET /runs/<id>/` as the staff user, the page made usable
  (that GET, then its inspector socket from the page's `stream_after`: the snapshot and every
  later event), `GET /api/runs/<id>/state/?at=<random seq>` with the token, and the Daphne's
  RSS (`/proc/<pid>/status`). B11 starts 1,000 runs (100 per API token), opens one
  `/ws/ingest/` socket per run and 100 inspector sockets on every 10th run, sends each run 1
  event/s (the runs' phases spread over the second) for 5 s of warm-up and 60 s measured,
  and times each event from just before its frame's send to its arrival on the inspector
  (and to its ack); the baseline is the same with 10 runs on a fresh Daphne.
- B12 (`bench/impact.py`) runs in one Django process on its own workflow: 100 runs of 1,000
  events (the demo run's events, cycled) recorded through `run_start` and `event_ingest` under
  version 1; a draft (version 2) replaces the derived trigger. Each repetition runs
  `contextadmin.impact.impact_replay` over the registered source (`recorded_runs`, events read
  lazily from the database) as History and `impact_context` do, then the baseline: the same
  runs from the same source replayed once under their pinned version. A check first replays
  them under the pinned version as the candidate: no run may change.
- B11.http, B11.ws, B11.prod and B11.post (`bench/reporting.py`,
  `bench/reporting_figures.py`) report as runtimes really do: every run has its own
  `RunReporter(background=True)` (a sender thread, batched POSTs to `/api/runs/<id>/events/`
  after its 0.2 s `flush_interval`), the runs created first (100 per API token), 1 event/s per
  run with the phases spread over the second, 5 s of warm-up and 30 s measured, 100 inspector
  sockets on evenly spread runs. Two latencies per event:
  `event()` → the POST carrying it leaves this process (seen by wrapping
  `http.client.HTTPConnection.request` in the bench process), and that POST → the inspector.
  B11.http: 1 Daphne on SQLite (baseline: 100 runs, same run). B11.ws: the same 1,000 runs
  with `transport="websocket"` (a batch frame on the run's ingest socket; its departure seen
  by wrapping the websockets sync client's `send`), on a fresh database, baseline B11.http.
  `bench/reporter_transports.py` compares the two transports apart from the full run, the
  runtimes in worker processes, with the Daphne's CPU per event. B11.prod: Debian's nginx with
  docs/deploy.md's config (`devservers/nginx.py`) in front of 2 Daphnes, Redis (pubsub),
  PostgreSQL (`fsync` off), 2,000 runs, the CPU of each process tree. B11.post: 1,000
  runtimes each POST one-event batches back to back for 20 s, load shedding off (a closed
  loop would turn the wait into 503s), with the group commit and without it
  (`bench/ungrouped_asgi.py`: the same application with rounds capped at one request, each
  POST its own transaction), and through Django's request handler as before the POST had its
  own ASGI path (`bench/django_handler_asgi.py`).
- The two cores may be shared with other work: a full run waits before each figure (up to
  180 s) until the CPUs are idle, and every line ends with the 1-minute load average, how busy
  the CPUs were just before the figure and how much of them other work (processes that are
  not the benchmark's) took while it ran.
- `python -m bench --render var/bench-last.json` re-renders this file from the last run's
  saved results (the numbers and the command stay that run's), e.g. after editing
  `bench/notes.md`, which holds the sections below.
"""


NOTES = (Path(__file__).with_name("notes.md")).read_text()  # the findings (hand-written)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(
    figures: Sequence[Any],
    machine: Machine,
    layers: dict[str, str],
    command: str,
    profile: str,
    seconds: float,
    started: str,
    notes: str = "",
) -> str:
    lines = [
        "# Benchmarks",
        "",
        "Produced by (from the repository root, with the project's virtualenv):",
        "",
        "```sh",
        f".venv/bin/{command.strip()}",
        "```",
        "",
        f"{profile} run started {started}, {seconds:.0f} s. Machine:",
        "",
    ]
    lines += [f"- {line}" for line in machine.lines(layers)]
    lines += [
        "",
        "Targets are for 2 cores. *Met* compares the measured value with the target; ratios",
        "compare with the baseline measured in the same run.",
        "",
        "| # | what | measured | baseline (same run) | ratio | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        verdict = "—" if f.met is None else ("**met**" if f.met else "**missed**")
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (f.id, f.what, f.result, f.baseline or "—", f.ratio or "—", f.target)
            )
            + f" | {verdict} |"
        )
    lines += ["", "Every figure line as printed, with the machine it ran on:", "", "```"]
    lines += [f.line() for f in figures]
    lines += ["```", "", METHOD, NOTES]
    if notes:
        lines += ["", notes]
    return "\n".join(lines).rstrip() + "\n"
