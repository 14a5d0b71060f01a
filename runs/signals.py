"""The hooks around a run's writes: one place for what follows an ingest batch or a run start.

Receivers are connected in an ``AppConfig.ready`` (the broadcast in ``runs.apps``, the webhooks'
outbox in ``runs.webhooks.apps``); senders are ``runs.services.ingest`` and
``runs.services.lifecycle``. See docs/architecture.md ("After commit").

- ``events_stored``: once per ingest batch that stored new events, *inside* its transaction,
  after its rows are written. A receiver's writes commit or roll back with the batch (the
  webhooks' transactional outbox); a receiver that raises fails the batch, so keep them small.
  Arguments: ``run`` (the ``Run``, its counters updated), ``events`` (the new ``RunEvent`` rows,
  in seq order), ``flips`` (the new ``Flip`` rows), ``replay`` (True when the batch is a past
  run's events loaded by ``import_run``: a receiver that notifies people skips it).
- ``events_committed``: once per ingest batch that stored new events, *after* the commit,
  with the same arguments (``replay`` too) plus ``messages`` (the events' wire messages,
  ``(seq, text)``) and ``flags`` (the flags on after the batch). The channel-layer broadcast
  is a receiver. Sent robustly: a receiver that raises is logged and the others still run.
- ``run_stored``: once per new run, inside ``run_start``'s transaction (``run``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import Signal

logger = logging.getLogger(__name__)

events_stored = Signal()
events_committed = Signal()
run_stored = Signal()


def events_committed_send(**kwargs: Any) -> None:
    """Send ``events_committed`` robustly (from ``transaction.on_commit``): log what raised."""
    for receiver, outcome in events_committed.send_robust(**kwargs):
        if isinstance(outcome, Exception):
            logger.error(
                "events_committed receiver %s failed", getattr(receiver, "__qualname__", receiver),
                exc_info=outcome,
            )
