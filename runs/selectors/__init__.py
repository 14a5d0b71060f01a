"""Reads for runs, one module per concept; nothing here writes. The package exports them all,
so callers keep ``from runs import selectors``.

- ``run``: one run as the caller may see it (the one 404), its summary;
- ``stream``: the inspector's first snapshot and its catch-up messages (the state and the
  messages themselves are ``runs.state`` and ``runs.messages``, beneath the selectors), and a
  run's warnings for its page;
- ``runs_list``: the runs list's search and keyset pages;
- ``front_page``: the front page's workflows, live runs, recent changes and checklist;
- ``recorded``: what the definitions app reads of runs (impact's recorded runs, runs per version);
- ``export``: a run's log page by page, with its header;
- ``retention``: what ``prune_runs`` would delete."""

from runs.selectors.export import (
    EXPORT_CHUNK,
    run_events_chunk,
    run_export_header,
)
from runs.selectors.front_page import (
    LIVE_SHOWN,
    Checklist,
    WorkflowRow,
    first_run_checklist,
    recent_changes,
    runs_live,
    runs_live_count,
    workflow_last_runs,
    workflow_rows,
)
from runs.selectors.recorded import (
    recorded_runs,
    run_published_version,
    workflow_runs_by_version,
)
from runs.selectors.retention import (
    PrunePlan,
    prune_plan,
    runs_ended_before,
)
from runs.selectors.run import (
    parse_seq,
    run_ended_by,
    run_exists,
    run_get,
    run_identity,
    run_not_found,
    run_summary,
)
from runs.selectors.runs_list import (
    RUN_FILTERS,
    RUN_PAGE_MAX,
    RUN_PAGE_SIZE,
    RUN_SEARCH,
    RunPage,
    run_flag_names,
    run_last_event_at,
    run_page,
    run_search_parse,
    run_stale_after_s,
    run_workflow_names,
    runs_annotated,
)
from runs.selectors.stream import (
    CATCH_UP_CHUNK,
    WARNINGS_SHOWN,
    run_event_messages,
    run_snapshot,
    run_warning_count,
    run_warnings,
)

__all__ = [
    "CATCH_UP_CHUNK",
    "EXPORT_CHUNK",
    "LIVE_SHOWN",
    "RUN_FILTERS",
    "RUN_PAGE_MAX",
    "RUN_PAGE_SIZE",
    "RUN_SEARCH",
    "WARNINGS_SHOWN",
    "Checklist",
    "PrunePlan",
    "RunPage",
    "WorkflowRow",
    "first_run_checklist",
    "parse_seq",
    "prune_plan",
    "recent_changes",
    "recorded_runs",
    "run_ended_by",
    "run_event_messages",
    "run_events_chunk",
    "run_exists",
    "run_export_header",
    "run_flag_names",
    "run_get",
    "run_identity",
    "run_last_event_at",
    "run_not_found",
    "run_page",
    "run_published_version",
    "run_search_parse",
    "run_snapshot",
    "run_stale_after_s",
    "run_summary",
    "run_warning_count",
    "run_warnings",
    "run_workflow_names",
    "runs_annotated",
    "runs_ended_before",
    "runs_live",
    "runs_live_count",
    "workflow_last_runs",
    "workflow_rows",
    "workflow_runs_by_version",
]
