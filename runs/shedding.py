"""Load shedding on the events POST: a ``503`` with ``Retry-After`` while the POSTs this process
already holds have waited too long, instead of queueing more behind them.

Without it, an overloaded Daphne keeps every POST: each waits longer than the last, runtimes
time out (``RunReporter``: 10 s) and re-send batches the server is still working through, and
the committed rate collapses (docs/benchmarks.md, B11.prod). With it, the oldest POST in this
process bounds the wait: past ``API_EVENTS_SHED_AFTER_S``, a new POST is answered at once, before
authentication or any database work, with ``Retry-After`` of about that wait (spread, so the
runtimes do not all come back in the same second). ``RunReporter`` backs off for it and sends
what queued meanwhile as one larger batch, so the requests per second fall to what the process
commits, and nothing is lost: a refused batch is re-sent with the same seqs.

Only the events POST sheds. The ingest sockets are paced by their own acknowledgements, and a
run start or a GET is not on the hot path. Everything here runs on the process's event loop.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count

from django.conf import settings
from django.http import HttpRequest

from contextadmin.errors import Overloaded

__all__ = ["PostAdmission", "ShedRequestsFilter", "events_post_admitted"]

logger = logging.getLogger(__name__)

RETRY_AFTER_MAX_S = 30


class PostAdmission:
    """The POSTs in flight in one process, oldest first; ``admitted()`` refuses a new one while
    the oldest has waited more than ``shed_after`` seconds (0: never)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[int, int], int] = random.randint,
    ) -> None:
        self._clock = clock
        self._jitter = jitter
        self._in_flight: dict[int, float] = {}  # ticket -> when it was admitted, oldest first
        self._tickets = count()
        self.shed = 0  # POSTs refused so far
        self._shedding = False  # one log line per overload, not one per refused POST

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def oldest_wait(self) -> float:
        """Seconds the oldest POST still in flight has waited (0 with none)."""
        for admitted in self._in_flight.values():  # dicts keep insertion order: the first
            return max(0.0, self._clock() - admitted)
        return 0.0

    @contextmanager
    def admitted(self, *, shed_after: float) -> Iterator[None]:
        """Hold one POST's place for its ``with`` block, or raise ``Overloaded``."""
        wait = self.oldest_wait()
        if shed_after > 0 and wait > shed_after:
            self.shed += 1
            if not self._shedding:
                self._shedding = True
                logger.warning(
                    "events POSTs refused (503) while the oldest of %d in flight has waited "
                    "%.1f s, more than API_EVENTS_SHED_AFTER_S (%g s)",
                    len(self._in_flight), wait, shed_after,
                )
            base = min(RETRY_AFTER_MAX_S, max(1, math.ceil(wait)))
            retry_after = self._jitter(base, min(RETRY_AFTER_MAX_S, 2 * base))
            raise Overloaded(
                f"server busy: the oldest batch in this process has waited {wait:.1f} s "
                f"(API_EVENTS_SHED_AFTER_S is {shed_after:g}); retry after {retry_after} s, "
                "with the same seqs",
                retry_after=retry_after,
            )
        if self._shedding:
            self._shedding = False
            logger.warning("events POSTs admitted again after %d refused so far", self.shed)
        ticket = next(self._tickets)
        self._in_flight[ticket] = self._clock()
        try:
            yield
        finally:
            del self._in_flight[ticket]


_admission = PostAdmission()


@contextmanager
def events_post_admitted(request: HttpRequest) -> Iterator[None]:
    """This process's admission of one events POST (``API_EVENTS_SHED_AFTER_S``). A refused
    request is marked, so Django's request log leaves it to the one line above."""
    try:
        with _admission.admitted(shed_after=settings.API_EVENTS_SHED_AFTER_S):
            yield
    except Overloaded:
        request.events_post_shed = True  # type: ignore[attr-defined]
        raise


class ShedRequestsFilter(logging.Filter):
    """For ``django.request``: drop the per-request line of a shed POST (an overload would
    otherwise log one error per refused request, thousands a second)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return not getattr(request, "events_post_shed", False)
