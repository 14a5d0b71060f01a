"""A workflow's recent runs, per version, for its admin page.

The runs live in the ``runs`` app, which this app must not import (docs/architecture.md); the
``runs`` app registers a source with ``runs_by_version_register`` in its ``AppConfig.ready``,
as it does for ``contextadmin.impact``. Without one, the workflow page lists no runs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_VERSIONS = 5  # the newest versions that have runs
DEFAULT_PER_VERSION = 5  # the newest runs of each


@dataclass(frozen=True)
class RunLink:
    """One run as the workflow page lists it, with the URL of its inspector page."""

    run_id: str
    url: str
    status: str
    environment: str
    enterprise_id: str
    started_at: dt.datetime | None


@dataclass(frozen=True)
class VersionRuns:
    """The newest runs that pinned one version (``version`` None: started unversioned)."""

    version: int | None
    count: int  # every run of this version, not only those listed
    runs: list[RunLink] = field(default_factory=list)


@dataclass(frozen=True)
class WorkflowRuns:
    versions: list[VersionRuns]  # newest version first
    list_url: str  # every run of the workflow


# A source takes ``workflow_name``, ``versions`` and ``per_version`` (keywords).
RunsByVersionSource = Callable[..., WorkflowRuns]
_SOURCES: list[RunsByVersionSource] = []


def runs_by_version_register(source: RunsByVersionSource) -> None:
    """Let the app that records runs list them (called once, from its AppConfig.ready)."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def runs_by_version(
    *,
    workflow_name: str,
    versions: int = DEFAULT_VERSIONS,
    per_version: int = DEFAULT_PER_VERSION,
) -> WorkflowRuns | None:
    """Return a workflow's newest runs grouped by the version they pinned; None without a
    registered source."""
    if not _SOURCES:
        return None
    return _SOURCES[-1](workflow_name=workflow_name, versions=versions, per_version=per_version)
