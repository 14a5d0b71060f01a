"""What a runtime tells its operator when the server refuses it (no Django): the cause, and
the fix, in one message. One owner for both the run start (``contextadmin_sdk.client``) and the
definitions fetch (``contextadmin_sdk.client.definitions``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextadmin_sdk.client.transport import ReportError

__all__ = ["from_api", "refusal_fix", "start_refused_message"]


def from_api(body: Any) -> bool:
    """Whether a refusal's body is the API's own (``{"error": ...}``): a 404 without it came
    from something else at that URL (a base URL with a wrong path), not from the API."""
    return isinstance(body, dict) and isinstance(body.get("error"), str)


def refusal_fix(
    status: int | None,
    *,
    workflow: str | None = None,
    base_url_wrong: str | None = None,
    field: str | None = None,
) -> str:
    """What the operator does about a 4xx of the server; ``base_url_wrong``: the base URL, when
    the refusal did not come from the API (``from_api``); ``field``: what the API's error
    names (a 404 naming ``version`` is about a workflow that exists)."""
    named = f"the workflow {workflow}" if workflow else "the workflow"
    if status == 404 and base_url_wrong is not None:
        return (
            f"fix: base_url {base_url_wrong} does not lead to contextadmin's API (this 404 is not "
            "the API's JSON error): give the server's root URL, http://HOST[:PORT], with no "
            "path after it unless a proxy serves contextadmin under one"
        )
    if status == 400 and base_url_wrong is not None:  # Django's own page, not the API's JSON
        return (
            f"fix: the server at {base_url_wrong} refused the request before contextadmin's API "
            "saw it (Django answers a host name it does not serve with a bare 400): use an "
            "address it serves, or add this one to its DJANGO_ALLOWED_HOSTS"
        )
    if status == 401:
        return "fix: give the runtime a valid API token (manage.py create_api_token NAME)"
    if status == 403:
        return f"fix: use a token that may read and start runs of {named}"
    if status == 404 and field == "version":
        return (
            f"fix: ask for a version {workflow or 'the workflow'} has (no version: the "
            "published one), or publish one in the admin (History; a draft awaiting review "
            "needs its approval)"
        )
    if status == 404:
        return (
            f"fix: create or import {named} on the server (the admin, or manage.py "
            "import_context), or correct the workflow's name"
        )
    return "fix what the server names, then retry"


def start_refused_message(
    *,
    run_id: str | None,
    refusal: ReportError,
    workflow: str | None,
    spool_path: Path | None,
    capacity: int,
    base_url: str,
) -> str:
    """The one error of a refused run start: why, the fix, and where the events wait."""
    body = refusal.body if isinstance(refusal.body, dict) else {}
    if body.get("field") == "definitions":  # another workflow's: the same start cannot succeed
        fix = (
            "fix: this start cannot succeed as sent (retry_start() would send the same "
            "definitions): start a new run with this workflow's definitions, or as the "
            "workflow they belong to"
        )
        return (
            f"the server refused to start run {run_id}: {refusal}; {fix}. No run exists there; "
            "the chat goes on unreported"
        )
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
    wrong = None if from_api(refusal.body) else base_url
    fix = refusal_fix(refusal.status, workflow=workflow, base_url_wrong=wrong)
    return (
        f"the server refused to start run {run_id}: {refusal}; {fix}. No run exists there yet; "
        f"the chat goes on and its events are {kept}"
    )
