"""The body of a run start (``POST /api/runs/``), built from what ``RunReporter.start`` was
given: one place that says which fields a start carries and how each is sent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextadmin_sdk.client.definitions import declared_mapping
from contextadmin_sdk.engine.format import ContextVariablesFile


def start_body(
    *,
    workflow: str,
    enterprise_id: str,
    run_id: str | None,
    environment: str | None,
    context: dict[str, Any] | None,
    definitions: ContextVariablesFile | Mapping[str, Any] | None,
    runtime: Mapping[str, str] | None,
    unresolved: Mapping[str, str] | None,
) -> dict[str, Any]:
    """The start's JSON body: only the fields given (the server fills in the rest)."""
    body: dict[str, Any] = {"workflow": workflow, "enterprise_id": enterprise_id}
    if run_id is not None:
        body["run_id"] = run_id
    if environment is not None:
        body["environment"] = environment
    if context is not None:
        body["context"] = context
    if definitions is not None:
        body["definitions"] = declared_mapping(definitions)
    if runtime is not None:
        body["runtime"] = dict(runtime)
    if unresolved:
        body["unresolved"] = dict(unresolved)
    return body
