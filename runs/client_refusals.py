"""What a runtime tells its operator when the server refuses it (no Django): the cause, and
the fix, in one message. One owner for both the run start (``runs.client``) and the
definitions fetch (``runs.client_definitions``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["refusal_fix", "start_refused_message"]


def refusal_fix(status: int | None, *, workflow: str | None = None) -> str:
    """What the operator does about a 4xx of the server."""
    named = f"the workflow {workflow}" if workflow else "the workflow"
    if status == 401:
        return "fix: give the runtime a valid API token (manage.py create_api_token NAME)"
    if status == 403:
        return f"fix: use a token that may read and start runs of {named}"
    if status == 404:
        return (
            f"fix: create or import {named} on the server (the admin, or manage.py "
            "import_context), or correct the workflow's name"
        )
    return "fix what the server names, then retry"


def start_refused_message(
    *,
    run_id: str | None,
    cause: str,
    status: int | None,
    workflow: str | None,
    spool_path: Path | None,
    capacity: int,
) -> str:
    """The one error of a refused run start: why, the fix, and where the events wait."""
    if spool_path is not None:
        kept = (
            f"kept in {spool_path}: once fixed, call reporter.retry_start(), or resume the run "
            f"in a new process with the same spool_dir and run_id={run_id!r}"
        )
    else:
        kept = (
            f"kept in memory (up to {capacity}): once fixed, call reporter.retry_start() "
            "before the process ends (a spool_dir keeps them longer)"
        )
    return (
        f"the server refused to start run {run_id}: {cause}; "
        f"{refusal_fix(status, workflow=workflow)}. No run exists there yet; the chat goes on "
        f"and its events are {kept}"
    )
