"""Per-process caches: each run's parsed definitions and the live state of the runs this
process ingests into.

Each cache only saves work: every value can be rebuilt from the database, so
several processes, or a restart, never disagree about a run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from contextadmin_sdk.engine import RunState
from contextadmin_sdk.engine.format import ContextVariablesFile, config_digest, parse_config

from runs.models import Run

CONFIGS_MAX = 256
# The live states kept between batches, bounded by their size as stored (JSON bytes), not
# their number: a state is at most about 1 MB (the engine's budget, docs/reliability.md), so
# this keeps the 64 runs ingested longest ago at worst and thousands of ordinary ones. The
# least recently kept leaves first; a state bigger than the whole budget is not kept.
LIVE_STATES_MAX_BYTES = 64 * 1024 * 1024

_configs_by_hash: dict[str, ContextVariablesFile] = {}
_production_digests: dict[str, str] = {}


def run_config(run: Run) -> ContextVariablesFile:
    """Return the run's pinned definitions, parsed once per process.

    Keyed by the definitions' hash, so a run loaded without its ``definitions`` column (ingest
    defers it) reads and parses them only on this process's first batch of that workflow.
    """
    config = _configs_by_hash.get(run.definitions_hash)
    if config is None:
        config = parse_config(run.definitions).config
        if len(_configs_by_hash) >= CONFIGS_MAX:
            _configs_by_hash.clear()
        _configs_by_hash[run.definitions_hash] = config
    return config


def run_digest_production(run: Run) -> str:
    """Return the digest of the run's definitions as a production export, computed once per
    process: a runtime deployed with that export holds these definitions too (a start with it
    pins the same version), so a resume compares against both digests."""
    digest = _production_digests.get(run.definitions_hash)
    if digest is None:
        digest = config_digest(run_config(run), production=True)
        if len(_production_digests) >= CONFIGS_MAX:
            _production_digests.clear()
        _production_digests[run.definitions_hash] = digest
    return digest


@dataclass
class LiveState:
    """A run's state as of ``run.last_seq``, with what the database holds of it: the seq of
    the stored ``run.state`` (ingest rewrites it only now and then) and its size in bytes."""

    state: RunState
    stored_seq: int
    size: int


_live_states: dict[str, tuple[Any, int, str, LiveState]] = {}  # pk -> key..., live state
_live_bytes = 0
_live_lock = threading.Lock()


def live_state_take(run: Run) -> LiveState | None:
    """Return the run's state as of ``run.last_seq`` that this process kept after its last
    batch, when it still matches (same run, same last seq); None when it must be read.

    The caller owns the returned state (it leaves the cache): a batch that fails half-way
    cannot leave a half-applied state behind. ``live_state_keep`` puts it back after commit.
    """
    global _live_bytes
    with _live_lock:
        kept = _live_states.pop(run.pk, None)
        if kept is not None:
            _live_bytes -= kept[3].size
    if kept is not None and kept[:3] == (run.started_at, run.last_seq, run.definitions_hash):
        return kept[3]
    return None


def live_state_keep(run: Run, live: LiveState) -> None:
    """Keep a run's state as of ``run.last_seq`` for its next batch, counted against
    LIVE_STATES_MAX_BYTES by its size."""
    global _live_bytes
    with _live_lock:
        old = _live_states.pop(run.pk, None)
        if old is not None:
            _live_bytes -= old[3].size
        if live.size > LIVE_STATES_MAX_BYTES:
            return
        while _live_states and _live_bytes + live.size > LIVE_STATES_MAX_BYTES:
            _live_bytes -= _live_states.pop(next(iter(_live_states)))[3].size
        _live_states[run.pk] = (run.started_at, run.last_seq, run.definitions_hash, live)
        _live_bytes += live.size
