"""The run lifecycle, one owner for it: ``running`` <-> ``paused`` (either way, any number of
times) until a ``run_status`` of ``completed``, ``failed`` or ``cancelled`` ends the run. An
ended run takes no event at all (``RunEnded``) and is never reopened. A ``run_status`` of
``running`` after the run's first event marks where it resumed (``execution.resumes``): after a
pause, or where a new runtime took over a run whose runtime died. The errors a run's state
raises for an event it cannot take live here too."""

from __future__ import annotations

from typing import Any

from .events import RUN_STATUSES
from .format import RESUMES_MAX

__all__ = [
    "RUN_ENDED_STATUSES",
    "RUN_TRANSITIONS",
    "EventError",
    "RunEnded",
    "SeqError",
    "resume_mark",
    "run_status_problem",
]

# The run lifecycle: running <-> paused -> completed | failed | cancelled. A status may repeat
# while the run lives (a no-op); an ended run has no way out.
RUN_ENDED_STATUSES = frozenset({"completed", "failed", "cancelled"})
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    status: (frozenset() if status in RUN_ENDED_STATUSES else frozenset(RUN_STATUSES))
    for status in RUN_STATUSES
}


class EventError(ValueError):
    """An event this run cannot take; ``problems`` name the fields."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class SeqError(EventError):
    """An event whose ``seq`` is not the next one (``expected`` is)."""

    def __init__(self, *, expected: int, got: int) -> None:
        self.expected = expected
        self.got = got
        super().__init__([f"seq: expected {expected}, got {got}"])


class RunEnded(EventError):
    """An event for a run that has ended: it takes no more (``status`` is how it ended)."""

    def __init__(self, status: str) -> None:
        self.status = status
        super().__init__([f"run_status: the run has ended ({status}): it takes no more events"])


def run_status_problem(current: str, new: str) -> str | None:
    """Say why a run in status ``current`` cannot move to ``new`` (None when it may)."""
    if new in RUN_TRANSITIONS.get(current, frozenset()):
        return None
    return f"status: a {current} run cannot become {new}"


def resume_mark(execution: dict[str, Any], *, seq: int, status: str) -> dict[str, Any] | None:
    """Record a ``run_status`` of ``status`` at ``seq`` that resumes the run: ``running`` after
    its first event, as ``{"seq", "from"}`` (``from``: the status before, ``paused``, or
    ``running`` when the runtime before stopped without pausing). The run page marks it on the
    path, so an operator sees where one runtime stopped and the next took over. Absent until
    the first; the latest ``RESUMES_MAX`` are kept. Returns the mark (``None``: no resume)."""
    if status != "running" or seq <= 1:  # a run's first event resumes nothing
        return None
    mark = {"seq": seq, "from": execution["status"]}
    resumes: list[dict[str, Any]] = execution.setdefault("resumes", [])
    resumes.append(mark)
    del resumes[:-RESUMES_MAX]
    return dict(mark)
