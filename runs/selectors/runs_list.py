"""The runs list: filters, search and keyset pages."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.utils.dateparse import parse_datetime

from contextadmin.errors import BadRequest
from runs.json_input import datetime_decode
from runs.models import Flip, Run, RunEvent

RUN_FILTERS = ("workflow", "status", "enterprise_id", "environment")


def run_workflow_names() -> list[str]:
    """Return the workflow names that have runs, for the runs list's filter."""
    names = Run.objects.order_by("workflow_name").values_list("workflow_name", flat=True)
    return list(names.distinct())


# -- the runs list: search and keyset pages ---------------------------------------------------
RUN_SEARCH = (*RUN_FILTERS, "q", "since", "until", "flag")
RUN_PAGE_SIZE = 50
RUN_PAGE_MAX = 500


def runs_annotated(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Add each run's last event time (one indexed look-up per row, in the same query)."""
    last = RunEvent.objects.filter(run=OuterRef("pk"), seq=OuterRef("last_seq"))
    return runs.annotate(last_event_at=Subquery(last.values("received_at")[:1]))


def run_search_parse(query: Mapping[str, str]) -> dict[str, str]:
    """Read the runs list's search from a query: every field stripped, bad ones refused by name
    (all of them at once: fixing one should not reveal the next)."""
    search = {key: (query.get(key) or "").strip()[:200] for key in RUN_SEARCH}
    problems = []
    if search["status"] and search["status"] not in Run.Status.values:
        problems.append(
            f"status: one of {', '.join(Run.Status.values)}, got {search['status']!r}"
        )
    if search["environment"] and search["environment"] not in Run.Environment.values:
        problems.append(
            f"environment: one of {', '.join(Run.Environment.values)}, "
            f"got {search['environment']!r}"
        )
    for name in ("since", "until"):
        if search[name]:
            try:
                datetime_decode(search[name], what=name)
            except BadRequest as exc:
                problems.append(exc.message)
    if problems:
        raise BadRequest("; ".join(problems))
    return search


def _runs_searched(search: Mapping[str, str]) -> QuerySet[Run]:
    runs = Run.objects.defer("definitions", "provenance", "warnings")
    for key in RUN_FILTERS:
        if search.get(key):
            runs = runs.filter(**{"workflow_name" if key == "workflow" else key: search[key]})
    if search.get("q"):  # a run id, or the start of one (as the list shows it)
        runs = runs.filter(pk__startswith=search["q"])
    if search.get("since"):
        runs = runs.filter(started_at__gte=datetime_decode(search["since"], what="since"))
    if search.get("until"):
        runs = runs.filter(started_at__lt=datetime_decode(search["until"], what="until"))
    if search.get("flag"):  # a derived flag flipped to true in the run
        flipped = Flip.objects.filter(run=OuterRef("pk"), variable=search["flag"], value=True)
        runs = runs.filter(Exists(flipped))
    return runs


def _cursor_encode(run: Run) -> str:
    raw = f"{run.started_at.isoformat()}|{run.pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_decode(cursor: str, *, name: str) -> tuple[dt.datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        started, run_id = raw.split("|", 1)
        started_at = parse_datetime(started)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        started_at = None
    if started_at is None:
        raise BadRequest(f"{name}: not a cursor this list gave (follow its Older or Newer link)")
    return started_at, run_id


@dataclass
class RunPage:
    runs: list[Run]
    next_cursor: str | None  # the ``before`` of the next (older) page; None on the last page
    prev_cursor: str | None = None  # the ``after`` of the newer page; None on the newest


def run_page(
    *, search: Mapping[str, str], before: str = "", after: str = "", size: int = RUN_PAGE_SIZE
) -> RunPage:
    """Return one page of runs, newest first: older than the cursor ``before``, or newer than
    ``after`` (the way back), or the newest page (one query either way).

    Keyset pagination on (started_at, id): the page costs the same at the first run and the
    100,000th, where OFFSET would read and drop every run before it.
    """
    if not 0 < size <= RUN_PAGE_MAX:
        raise BadRequest(f"size: between 1 and {RUN_PAGE_MAX}, got {size}")
    if before and after:
        raise BadRequest("after: give either before or after, not both")
    runs = runs_annotated(_runs_searched(search))
    if after:  # walking back towards the newest: the nearest newer runs, then newest first
        started_at, run_id = _cursor_decode(after, name="after")
        runs = runs.filter(Q(started_at__gt=started_at) | Q(started_at=started_at, pk__gt=run_id))
        rows = list(runs.order_by("started_at", "pk")[: size + 1])
        newer = len(rows) > size
        rows = rows[:size][::-1]
        return RunPage(
            runs=rows,
            next_cursor=_cursor_encode(rows[-1]) if rows else None,
            prev_cursor=_cursor_encode(rows[0]) if newer else None,
        )
    if before:
        started_at, run_id = _cursor_decode(before, name="before")
        runs = runs.filter(Q(started_at__lt=started_at) | Q(started_at=started_at, pk__lt=run_id))
    rows = list(runs.order_by("-started_at", "-pk")[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    return RunPage(
        runs=rows,
        next_cursor=_cursor_encode(rows[-1]) if more else None,
        prev_cursor=_cursor_encode(rows[0]) if before and rows else None,
    )


def run_flag_names() -> list[str]:
    """Return the derived flags that ever flipped, for the search's flag field."""
    return list(Flip.objects.order_by("variable").values_list("variable", flat=True).distinct())


def run_last_event_at(*, run: Run) -> dt.datetime | None:
    """When the run's last event arrived (None before its first)."""
    last = RunEvent.objects.filter(run=run, seq=run.last_seq)
    return last.values_list("received_at", flat=True).first()


def run_stale_after_s() -> int:
    """Seconds without an event after which a running run is shown as stale."""
    return int(getattr(settings, "RUNS_STALE_AFTER_S", 300))
