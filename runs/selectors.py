"""Reads for runs: state at any seq (replay from the nearest snapshot), the log and its wire
messages, summaries. Nothing here writes."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import orjson
from django.conf import settings
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Sum, Window
from django.db.models.functions import RowNumber
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contextadmin import selectors as definitions
from contextadmin.errors import BadRequest, NotFound
from contextadmin.impact import RecordedRun
from contextadmin.models import Workflow, WorkflowVersion
from contextadmin.recent_runs import RunLink, VersionRuns, WorkflowRuns
from runs.engine import RUN_ENDED_STATUSES, RunState, event_sender, handoffs_readiness
from runs.engine.format import RUN_ID_MAX_CHARS, ContextVariablesFile, run_id_valid
from runs.engine.state import NAMESPACES
from runs.models import ApiToken, Flip, Run, RunEvent, RunSnapshot
from runs.services.caches import run_config
from runs.services.tokens import token_sees_workflow

CATCH_UP_CHUNK = 500


def json_text(data: Any) -> str:
    """Serialize once for the wire (orjson: fast, and it refuses NaN)."""
    return orjson.dumps(data).decode()


def run_not_found(run_id: str) -> NotFound:
    """The one answer for a run the caller may not know of: unknown, malformed or foreign to
    the caller's token all read the same, so a scoped token learns nothing of other runs."""
    return NotFound(f"run_id: no run {run_id[:RUN_ID_MAX_CHARS + 1]!r}")


def run_get(*, run_id: str, token: ApiToken | None = None) -> Run:
    """Return a run or raise NotFound naming it; a token scoped to another workflow gets the
    same NotFound as for an unknown run (``token_sees_workflow``)."""
    if not run_id_valid(run_id):  # no run has such an id; never sent to SQL
        raise run_not_found(run_id)
    run = Run.objects.filter(pk=run_id).first()
    if run is None or not token_sees_workflow(token=token, workflow_name=run.workflow_name):
        raise run_not_found(run_id)
    return run


def parse_seq(raw: str | None, *, name: str = "at") -> int | None:
    """Parse a ``?at=``/``?after=`` query value: None when absent, else a seq >= 0."""
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:  # not "¹" or "٣"
        raise BadRequest(f"{name}: must be a non-negative integer, got {raw[:40]!r}")
    return int(raw)


def handoffs_now(config: ContextVariablesFile, context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each hand-off rule with whether it holds in this context (the engine decides)."""
    return handoffs_readiness(config, context) if config.handoffs else []


@dataclass
class StateAt:
    seq: int
    state: dict[str, Any]

    def as_response(self, run: Run) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "workflow_version": run.workflow_version,  # the version the run pinned
            "definitions": {  # what it pinned: a version of this server, or the runtime's own
                "source": run.definitions_source,
                "digest": f"sha256:{run.definitions_hash}",
            },
            "runtime": run.runtime,  # what reported the run: {"framework", "version", "sdk"}
            # agent and world: {} in a state stored before seed 004's namespaces
            "state": {k: self.state.get(k, {}) for k in NAMESPACES},
            "provenance": run.provenance,
            "flips": self.state.get("flips", []),
            "writes": self.state.get("writes", {}),  # agent/world path -> tool, field, seq
            "handoffs": handoffs_now(run_config(run), self.state["context"]),
        }


def run_state_at(*, run: Run, seq: int | None = None) -> StateAt:
    """Return the state after ``seq`` events (latest when None), replayed from the log."""
    seq = run.last_seq if seq is None else seq
    if seq == stored_state_seq(run.state):
        return StateAt(seq=seq, state=run.state)
    return StateAt(seq=seq, state=run_state_rebuilt(run=run, seq=seq).to_dict())


def run_snapshot(*, run_id: str, after: int | None) -> dict[str, Any]:
    """The inspector's first message: the state as of ``after`` (latest when None), the
    hand-off readiness then, and the run's summary."""
    run = run_get(run_id=run_id)
    state = run_state_at(run=run, seq=after).as_response(run)
    # the run's last event as stored: the page's "Last event" for every event up to the
    # summary's event_count, however late the page replays them
    run.last_event_at = run_last_event_at(run=run)  # type: ignore[attr-defined]
    return {"type": "snapshot", **state, "run": run_summary(run=run)}


def stored_state_seq(state: Mapping[str, Any]) -> int:
    """The seq a stored state (``run.state``, a snapshot) is as of.

    Ingest rewrites ``run.state`` only now and then (``runs.services.ingest``), so it may be
    behind ``run.last_seq``; the state says itself how far it is."""
    return int((state.get("execution") or {}).get("last_seq") or 0)


def run_state_rebuilt(*, run: Run, seq: int) -> RunState:
    """The run's state after ``seq`` events: the nearest stored state at or before it (the
    run's own ``state`` or a snapshot, every SNAPSHOT_EVERY events), then the log after it."""
    if seq > run.last_seq:
        raise BadRequest(f"at: the run has {run.last_seq} events, got at={seq}")
    config = run_config(run)
    base, base_seq = run.state, stored_state_seq(run.state)
    if base_seq > seq:
        base, base_seq = None, -1
    if base_seq < seq:
        snapshot = (
            RunSnapshot.objects.filter(run=run, seq__lte=seq, seq__gt=base_seq)
            .order_by("-seq")
            .first()
        )
        if snapshot is not None:
            base, base_seq = snapshot.state, snapshot.seq
    if base is None:  # runs always have one at seq 0; be robust anyway
        raise NotFound(f"run {run.pk} has no snapshot to replay from")
    state = RunState.from_dict(config, base)
    if base_seq < seq:
        payloads = RunEvent.objects.filter(run=run, seq__gt=base_seq, seq__lte=seq).order_by("seq")
        for payload in payloads.values_list("payload", flat=True).iterator(chunk_size=500):
            state.apply(payload)
    return state


def event_message(
    *,
    seq: int,
    event: Mapping[str, Any],
    result: Mapping[str, Any],
    handoffs: list[dict[str, Any]],
) -> str:
    """The inspector's wire message for one stored event (live and catch-up alike)."""
    message = {
        "type": "event",
        "seq": seq,
        "event": event,
        "agent": event_sender(event),
        "flips": result.get("flips", []),
        "changes": result.get("changes", {}),
        "handoffs": handoffs,
    }
    if "outputs" in result:  # a mapped tool's response: what each output mapping wrote
        message["outputs"] = result["outputs"]
    return json_text(message)


def run_event_messages(
    *, run_id: str, after: int, limit: int = CATCH_UP_CHUNK
) -> list[tuple[int, str]]:
    """Return the wire messages of the events after ``after``, in order (for catch-up).

    Each message carries the hand-off readiness after its event, so the log is replayed from
    the state at ``after``: the same messages the live broadcast sent.
    """
    events = list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])
    if not events:
        return []
    run = run_get(run_id=run_id)
    config = run_config(run)
    state = run_state_rebuilt(run=run, seq=after)
    messages = []
    for event in events:
        state.apply(event.payload)
        handoffs = handoffs_now(config, state.context)
        text = event_message(seq=event.seq, event=event.payload, result=event.result,
                             handoffs=handoffs)
        messages.append((event.seq, text))
    return messages


def run_flags(flips: list[dict[str, Any]]) -> list[str]:
    """The flags a run's flips left on (the runs list's "flags" column)."""
    return sorted({f["name"] for f in flips if f.get("value") is True})


def run_summary(*, run: Run, flags: list[str] | None = None) -> dict[str, Any]:
    """Describe a run for lists and the runs socket.

    ``last_event_at`` is known when the run was read with ``runs_annotated`` (lists, the run
    page); the socket's summaries leave it None and the page takes the arrival time instead.
    ``flags`` (``run_flags``) saves reading the run's stored state when the caller has them.
    """
    last_event_at = getattr(run, "last_event_at", None)
    return {
        "id": run.pk,
        "workflow": run.workflow_name,
        "workflow_version": run.workflow_version,
        "enterprise_id": run.enterprise_id,
        "environment": run.environment,
        "status": run.status,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "event_count": run.last_seq,
        "flip_count": run.flip_count,
        "flags": run_flags(run.state.get("flips", [])) if flags is None else flags,
        "last_event_at": last_event_at.isoformat() if last_event_at else None,
        "ended_by": run_ended_by(run=run),
        "live": run.status not in RUN_ENDED_STATUSES,  # running or paused: the pages list it
    }


def run_ended_by(*, run: Run) -> str | None:
    """Say how an ended run ended: ``completed``, ``crash`` (failed) or ``cancelled``; None
    while it lives (running or paused). The page shows a crash differently from a completion."""
    if run.status not in RUN_ENDED_STATUSES:
        return None
    return "crash" if run.status == Run.Status.FAILED else run.status


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


def _search_time(raw: str, *, name: str) -> dt.datetime:
    parsed = parse_datetime(raw)
    if parsed is None:
        raise BadRequest(
            f"{name}: expected a date and time like 2026-01-31T12:00, got {raw[:40]!r}"
        )
    return timezone.make_aware(parsed, dt.UTC) if timezone.is_naive(parsed) else parsed


def run_search_parse(query: Mapping[str, str]) -> dict[str, str]:
    """Read the runs list's search from a query: every field stripped, bad ones refused by name."""
    search = {key: (query.get(key) or "").strip()[:200] for key in RUN_SEARCH}
    if search["status"] and search["status"] not in Run.Status.values:
        raise BadRequest(f"status: one of {', '.join(Run.Status.values)}, got {search['status']!r}")
    if search["environment"] and search["environment"] not in Run.Environment.values:
        raise BadRequest(
            f"environment: one of {', '.join(Run.Environment.values)}, "
            f"got {search['environment']!r}"
        )
    for name in ("since", "until"):
        if search[name]:
            _search_time(search[name], name=name)
    return search


def _runs_searched(search: Mapping[str, str]) -> QuerySet[Run]:
    runs = Run.objects.defer("definitions", "provenance", "warnings")
    for key in RUN_FILTERS:
        if search.get(key):
            runs = runs.filter(**{"workflow_name" if key == "workflow" else key: search[key]})
    if search.get("q"):  # a run id, or the start of one (as the list shows it)
        runs = runs.filter(pk__startswith=search["q"])
    if search.get("since"):
        runs = runs.filter(started_at__gte=_search_time(search["since"], name="since"))
    if search.get("until"):
        runs = runs.filter(started_at__lt=_search_time(search["until"], name="until"))
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


# -- the front page -----------------------------------------------------------------------------
@dataclass
class WorkflowRow:
    pk: int
    name: str
    description: str
    published: int | None  # the published version's number
    head: int | None  # the newest version's number (a draft when newer than published)
    last_run_id: str | None
    last_run_status: str | None
    last_run_started_at: dt.datetime | None


def workflow_rows() -> list[WorkflowRow]:
    """Each workflow with its published and newest version and its last run (one query)."""
    last_run = Run.objects.filter(workflow_name=OuterRef("name")).order_by("-started_at", "-pk")
    head = WorkflowVersion.objects.filter(workflow=OuterRef("pk")).order_by("-number")
    rows = (
        Workflow.objects.order_by("name")
        .annotate(
            # the workflow's own pointer (set only when a version is published); a subquery
            # on WorkflowVersion would join its default ordering's workflow and read another's
            published_number=F("published_version__number"),
            head_number=Subquery(head.values("number")[:1]),
            last_run_id=Subquery(last_run.values("pk")[:1]),
            last_run_status=Subquery(last_run.values("status")[:1]),
            last_run_started_at=Subquery(last_run.values("started_at")[:1]),
        )
        .values(
            "pk",
            "name",
            "description",
            "published_number",
            "head_number",
            "last_run_id",
            "last_run_status",
            "last_run_started_at",
        )
    )
    return [
        WorkflowRow(
            pk=row["pk"],
            name=row["name"],
            description=row["description"],
            published=row["published_number"],
            head=row["head_number"],
            last_run_id=row["last_run_id"],
            last_run_status=row["last_run_status"],
            last_run_started_at=row["last_run_started_at"],
        )
        for row in rows
    ]


def runs_live(*, limit: int = 20) -> list[Run]:
    """Return the live runs (running or paused), newest first (the front page's *live now*)."""
    runs = Run.objects.exclude(status__in=RUN_ENDED_STATUSES).defer("definitions", "provenance")
    return list(runs_annotated(runs).order_by("-started_at", "-pk")[:limit])


def recent_changes(*, limit: int = 8) -> list[WorkflowVersion]:
    """Return the newest versions across workflows (contextadmin's audit trail)."""
    return definitions.recent_changes(limit=limit)


@dataclass
class Checklist:
    token: bool  # a live API token exists
    run: bool  # a runtime has started a run
    watched: bool  # a run has ended (completed, failed or cancelled)

    @property
    def done(self) -> bool:
        return self.token and self.run and self.watched


def first_run_checklist() -> Checklist:
    """Tell which first-run steps are done (three EXISTS queries)."""
    return Checklist(
        token=ApiToken.objects.filter(revoked=False).exists(),
        run=Run.objects.exists(),
        watched=Run.objects.filter(status__in=RUN_ENDED_STATUSES).exists(),
    )


# -- recorded runs, for contextadmin.impact (registered in RunsConfig.ready) -------------------
def recorded_runs(
    *, workflow_name: str, limit: int
) -> Iterator[tuple[RecordedRun, ContextVariablesFile]]:
    """Yield up to ``limit`` of a workflow's runs, newest first, each with its start context,
    its events (read lazily, in seq order) and the definitions it pinned."""
    runs = Run.objects.filter(workflow_name=workflow_name).order_by("-started_at")[:limit]
    for run in runs.iterator(chunk_size=50):
        start = RunSnapshot.objects.filter(run=run, seq=0).values_list("state", flat=True).first()
        events = (
            RunEvent.objects.filter(run=run)
            .order_by("seq")
            .values_list("payload", flat=True)
            .iterator(chunk_size=500)
        )
        recorded = RecordedRun(
            run_id=run.pk,
            base_context=(start or {}).get("context", {}),
            events=events,
            environment=run.environment,
            version=run.workflow_version,
        )
        yield recorded, run_config(run)


# -- runs per version: the workflow page (contextadmin.recent_runs, registered in ready) -------
def run_published_version(*, run: Run) -> int | None:
    """Return the number of the version the run's workflow publishes now (one query; None
    when it has none or the workflow is gone), for the run page's "outdated" badge."""
    if run.workflow_id is None:
        return None
    published = Workflow.objects.filter(pk=run.workflow_id).values_list(
        "published_version__number", flat=True
    )
    return published.first()


def workflow_runs_by_version(
    *, workflow_name: str, versions: int, per_version: int
) -> WorkflowRuns:
    """Return the newest ``per_version`` runs of each of the newest ``versions`` versions that
    have runs, with each version's run count (two queries, whatever the number of runs)."""
    runs = Run.objects.filter(workflow_name=workflow_name)
    counts = list(
        runs.values("workflow_version")
        .annotate(count=Count("pk"))
        .order_by(F("workflow_version").desc(nulls_last=True))[:versions]
    )
    numbers = [row["workflow_version"] for row in counts]
    wanted = Q(workflow_version__in=[n for n in numbers if n is not None])
    if None in numbers:
        wanted |= Q(workflow_version__isnull=True)
    newest = (
        runs.filter(wanted)
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=[F("workflow_version")],
                order_by=[F("started_at").desc(), F("pk").desc()],
            )
        )
        .filter(rank__lte=per_version)
        .order_by("-started_at", "-pk")
        .values_list(
            "pk", "workflow_version", "status", "environment", "enterprise_id", "started_at"
        )
    )
    listed: dict[int | None, list[RunLink]] = {number: [] for number in numbers}
    for pk, number, status, environment, enterprise_id, started_at in newest if numbers else []:
        listed[number].append(
            RunLink(
                run_id=pk,
                url=reverse("runs-detail", args=[pk]),
                status=status,
                environment=environment,
                enterprise_id=enterprise_id,
                started_at=started_at,
            )
        )
    return WorkflowRuns(
        versions=[
            VersionRuns(
                version=row["workflow_version"],
                count=row["count"],
                runs=listed[row["workflow_version"]],
            )
            for row in counts
        ],
        list_url=f"{reverse('runs-list')}?{urlencode({'workflow': workflow_name})}",
    )


# -- export: a run's log, page by page --------------------------------------------------------
EXPORT_CHUNK = 1000


def run_events_chunk(*, run_id: str, after: int, limit: int = EXPORT_CHUNK) -> list[dict[str, Any]]:
    """Return up to ``limit`` stored events after seq ``after``, in order (one indexed query).

    Each payload already holds its ``seq``; the export streams these chunks one at a time, so
    its memory does not grow with the run.
    """
    payloads = (
        RunEvent.objects.filter(run_id=run_id, seq__gt=after)
        .order_by("seq")
        .values_list("payload", flat=True)[:limit]
    )
    return list(payloads)


def run_export_header(*, run: Run) -> dict[str, Any]:
    """The first line of a run's JSONL export: what ``import_run`` needs to rebuild it exactly
    (the pinned definitions, the state at seq 0, provenance and warnings). ``simulate_run``
    skips it: a line without ``type`` is not an event."""
    initial = RunSnapshot.objects.filter(run=run, seq=0).values_list("state", flat=True).first()
    return {
        "run": {
            "id": run.pk,
            "workflow": run.workflow_name,
            "enterprise_id": run.enterprise_id,
            "environment": run.environment,
            "status": run.status,
            "started_at": run.started_at.isoformat() if run.started_at else None,
            "ended_at": run.ended_at.isoformat() if run.ended_at else None,
            "last_event_at": _isoformat(run_last_event_at(run=run)),
            "last_seq": run.last_seq,
            "workflow_version": run.workflow_version,
            "definitions": run.definitions,
            "runtime": run.runtime,
            "provenance": run.provenance,
            "warnings": run.warnings,
            "initial_state": initial,
        }
    }


def _isoformat(moment: dt.datetime | None) -> str | None:
    return moment.isoformat() if moment else None


# -- retention: what prune_runs would delete ------------------------------------------------------
def runs_ended_before(*, cutoff: dt.datetime) -> QuerySet[Run]:
    """Runs that ended before ``cutoff``: the only runs retention may delete (a running run,
    however old, is never among them; an ended run takes no more events)."""
    return Run.objects.filter(status__in=RUN_ENDED_STATUSES, ended_at__lt=cutoff)


@dataclass
class PrunePlan:
    runs: int
    events: int
    flips: int


def prune_plan(*, cutoff: dt.datetime) -> PrunePlan:
    """Count what pruning at ``cutoff`` deletes (one query: a run's counters, not its log)."""
    totals = runs_ended_before(cutoff=cutoff).aggregate(
        runs=Count("pk"), events=Sum("last_seq"), flips=Sum("flip_count")
    )
    return PrunePlan(
        runs=totals["runs"] or 0, events=totals["events"] or 0, flips=totals["flips"] or 0
    )
