"""Writes for runs, one module per job; import the module you need.

- ``tokens``: API tokens (create, authenticate with a short per-process cache, revoke, scope);
- ``lifecycle``: start a run (``run_start``);
- ``ingest``: append events to a run's log (``event_ingest``);
- ``broadcast``: group messages after commit, bounded in time, with a breaker;
- ``caches``: per-process caches (parsed definitions, live states, the MongoDB client).

Nothing is re-exported here: ``runs.selectors`` imports ``caches``, and the services that read
import ``runs.selectors``, so importing this package must not import them all.
"""
