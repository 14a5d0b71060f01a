"""docs/benchmarks.md: the results table of one run, with the command that produced it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from bench.machine import Machine

METHOD = """\
## Method

- Servers are real processes started with `tests/support/processes.py`: Daphne with
  `DJANGO_DEBUG=0` on a temp-file SQLite database (WAL, `synchronous=NORMAL`), the in-memory
  channel layer with one Daphne, or `channels_redis` on a throwaway `redis-server` with two
  Daphnes. The database is prepared with `manage.py migrate`, `demo_setup` (the Generator
  workflow), `create_api_token` and a staff session made with `Client.force_login`.
- Clients run in the bench process: `websockets` (asyncio client, no compression) and a small
  keep-alive HTTP/1.1 client (`bench/http.py`). Client and servers share the same cores.
- Latency (B1, B3, B4) is measured from just before a runtime's `POST /api/runs/<id>/events/`
  (one event per request, paced at 100 events/s on an absolute schedule) to the arrival of the
  matching `{"type": "event", "seq": ...}` message on each inspector socket (`/ws/runs/<id>/`,
  `Origin` + session cookie). Each repetition starts a new run, opens the sockets, sends a
  warm-up, then the measured events; every socket must receive every seq exactly once and in
  order. Percentiles pool the samples of all repetitions; the spread of per-repetition p99 is
  shown too.
- The baseline of B1/B3 is a bare `websockets` relay process (`bench/relay.py`): the producer
  sends the same-sized message over a websocket and the relay forwards it to the consumer
  sockets, with no parsing, database or channel layer; measured in the same run.
- Throughput (B2) is measured per repetition (a new run each time) from the first request to
  the last response/ack; every event is committed before its response/ack. The median and the
  worst repetition are shown.
- B5 and B8 run in one Django process on their own temp SQLite database; B6 against
  `nx-27017` (MongoDB wire protocol over loopback TCP) with round trips counted by a pymongo
  `CommandListener`; B7 is the pure engine (no Django database).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(
    figures: Sequence[Any],
    machine: Machine,
    layers: dict[str, str],
    command: str,
    profile: str,
    seconds: float,
    notes: str = "",
) -> str:
    now = dt.datetime.now(dt.UTC)
    lines = [
        "# Benchmarks",
        "",
        "Produced by (from the repository root, with the project's virtualenv):",
        "",
        "```sh",
        f".venv/bin/{command.strip()}",
        "```",
        "",
        f"{profile} run of {now:%Y-%m-%d %H:%M} UTC, {seconds:.0f} s. Machine:",
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
    lines += ["```", "", METHOD]
    if notes:
        lines += ["", notes]
    return "\n".join(lines).rstrip() + "\n"
