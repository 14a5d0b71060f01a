"""A run's state, beneath both the services and the selectors (both import it; it imports
neither): ``rebuild`` (the state at any seq, from the nearest stored state and the log) and
``caches`` (each run's parsed definitions and the live states this process ingests into).

Ingest takes a run's live state from the cache or rebuilds it; the API, the pages and the
inspector's catch-up read states through ``rebuild``; so a read and a write agree by
construction."""

from runs.state.caches import (
    LiveState,
    live_state_keep,
    live_state_take,
    run_config,
)
from runs.state.rebuild import (
    StateAt,
    run_flags,
    run_state_at,
    run_state_rebuilt,
    stored_state_seq,
)

__all__ = [
    "LiveState",
    "StateAt",
    "live_state_keep",
    "live_state_take",
    "run_config",
    "run_flags",
    "run_state_at",
    "run_state_rebuilt",
    "stored_state_seq",
]
