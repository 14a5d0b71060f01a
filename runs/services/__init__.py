"""Writes for runs, one module per job; import the module you need.

- ``lifecycle``: start a run (``run_start``), pinned by ``run_pinning``;
- ``ingest``: append events to a run's log (``event_ingest``, ``events_ingest_many``);
- ``broadcast``: group messages after commit, bounded in time, with a breaker;
- ``run_import``: a JSONL export loaded back as a run, through ingest;
- ``retention``: ``prune_runs``' deletes.

The state they write through (rebuild, caches) is ``runs.state``, the messages they send
``runs.messages``, API tokens ``runs.tokens``: beneath both the services and the selectors.
Nothing is re-exported here, so importing this package imports none of them.
"""
