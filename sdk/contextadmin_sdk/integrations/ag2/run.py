"""One run seen by the AG2 1.x adapter: the bookkeeping both session kinds share.

A session folds what AG2 does into a ``RunState`` (the same fold the server runs, wrapping
``DerivedContextManager``) through ``on_text`` / ``on_tool`` / ``sync``, reports each run event
to the non-blocking ``RunReporter`` and ends the run on leaving ``with`` (or ``async with``).
Nothing here raises into the workflow: a failure to observe is logged once and the run goes on.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import ag2

from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.client.definitions import runtime_info
from contextadmin_sdk.engine import TEXT_MAX_CHARS, Applied, EventError, Flip, RunState
from contextadmin_sdk.engine.format import ContextVariablesFile
from contextadmin_sdk.integrations.common import completed_overview, refusal_message, tool_data
from contextadmin_sdk.integrations.context_sync import ContextSync

__all__ = ["RunSession", "result_text", "runtime"]

logger = logging.getLogger("contextadmin_sdk.integrations.ag2")


def runtime() -> dict[str, str]:
    """What reports the run: ``{"framework": "ag2", "version": ..., "sdk": ...}`` (the run
    header shows it)."""
    return runtime_info(framework="ag2", version=ag2.__version__)


class RunSession:
    """What both 1.x sessions share: ``.state``, ``.events``, ``.flips``, ``.warnings``,
    ``.run_id``, ``.completed_overview()``, and ``with session:`` ending the run."""

    def __init__(
        self,
        *,
        config: ContextVariablesFile,
        state: RunState,
        reporter: RunReporter | None,
        warnings: list[str],
        flush_timeout: float,
        replayed: list[dict[str, Any]],
    ) -> None:
        self.config = config
        self.state = state
        self.reporter = reporter
        self.production = state.environment == "production"
        self.warnings = warnings
        self.flush_timeout = flush_timeout
        self.events: list[dict[str, Any]] = list(replayed)  # every run event, with its seq
        self.flips: list[Flip] = [
            Flip(f["name"], f["value"], f["trigger_index"], dict(f.get("cause") or {}))
            for f in state.flips
        ]
        self.skipped_handoffs: list[dict[str, Any]] = []
        self.observed = 0  # AG2 events and envelopes seen
        self._declared = set(config.categories())
        self._sync = ContextSync(config, production=self.production)
        self._warned: set[str] = set()
        self._ended = False
        if state.get("execution.status") == "paused":  # a workflow that raised: running again
            self._emit({"type": "run_status", "status": "running"})

    # -- the contract ----------------------------------------------------------------------------
    @property
    def run_id(self) -> str | None:
        """The server's run id (None without a reporter)."""
        return self.reporter.run_id if self.reporter is not None else None

    def completed_overview(self) -> str:
        """Say which derived milestones this run has reached, and by which event (seed 003).

        Send it to the agent that continues a resumed run, so it does not redo them.
        """
        return completed_overview(self.config, self.state)

    def __enter__(self) -> RunSession:
        self._begin()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._finish()
        # An exception out of the workflow pauses the run: it can be resumed with run_id=...
        self.end("completed" if exc_type is None else "paused")

    async def __aenter__(self) -> RunSession:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._finish()
        status = "completed" if exc_type is None else "paused"
        await asyncio.to_thread(self.end, status)  # the flush waits: not on the workflow's loop

    def end(self, status: str = "completed") -> bool:
        """Report the run's status (``completed``, ``paused``, ``failed``...) and flush.

        Returns whether the server acknowledged everything within ``flush_timeout``.
        """
        if self._ended:
            return True
        self._emit({"type": "run_status", "status": status})
        if status != "paused":
            self._ended = True
        if self.reporter is None:
            return True
        return self.reporter.close(self.flush_timeout)

    def _begin(self) -> None:
        """Start observing (the subclass installs its hooks)."""

    def _finish(self) -> None:
        """Stop observing; warn when nothing was seen."""
        if self.observed == 0:
            self._warn_once(
                "no-events",
                "the session observed no AG2 1.x events: run the workflow (or the agent) inside "
                "`with session:`, on a channel opened with session.knobs(...)",
            )

    # -- observing -------------------------------------------------------------------------------
    def on_text(self, agent: str, text: str) -> list[Flip]:
        """An agent's (or a human's) turn said ``text``: fold it, return the flips."""
        applied = self._emit({"type": "agent_text", "agent": agent, "text": text[:TEXT_MAX_CHARS]})
        return applied.flips if applied is not None else []

    def on_tool(self, agent: str, tool: str, *, success: bool, text: str) -> list[Flip]:
        """A tool responded: fold its ``tool_response``, return the flips."""
        event = {
            "type": "tool_response",
            "agent": agent,
            "tool": tool,
            "status": "success" if success else "error",
            "data": tool_data(text),
        }
        applied = self._emit(event)
        if applied is None:  # e.g. data too deep: the response still counts, as text
            applied = self._emit({**event, "data": {"content": text[:TEXT_MAX_CHARS]}})
        return applied.flips if applied is not None else []

    def sync(
        self, data: Mapping[str, Any], *, agent: str | None = None, tool: str | None = None
    ) -> list[Flip]:
        """Report what the workflow changed in its context (a tool's ``set_context``): a
        declared variable's change is a ``context_set`` (a derived flag set to a boolean is a
        flip), a refused one a ``warning`` (in ``session.warnings`` too)."""
        flips: list[Flip] = []
        for event in self._sync.changes(data, self.state, agent=agent, tool=tool):
            if event["type"] == "warning":
                message = refusal_message(event)
                self.warnings.append(message)
                logger.warning("%s", message)
            applied = self._emit(event)
            if applied is not None:
                flips.extend(applied.flips)
        return flips

    # -- state -----------------------------------------------------------------------------------
    def _emit(self, event: dict[str, Any]) -> Applied | None:
        """Apply one run event to the state and report it; None when the run cannot take it."""
        try:
            applied = self.state.apply(event)
        except EventError as exc:
            self._warn_once(f"event:{event['type']}", f"not reported: {exc} ({event['type']})")
            return None
        event["seq"] = applied.seq
        self.events.append(event)
        self.flips.extend(applied.flips)
        if self.reporter is not None:
            fields = {key: value for key, value in event.items() if key not in ("type", "seq")}
            self.reporter.event(event["type"], **fields)
        return applied

    def _warn_once(self, key: str, message: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        self.warnings.append(message)
        logger.warning("%s", message)

    def _failed(self, what: str) -> None:
        """Log (once per kind) an observation that failed; the workflow goes on."""
        if f"fail:{what}" not in self._warned:
            self._warned.add(f"fail:{what}")
            logger.exception("could not observe %s; the workflow goes on", what)

    def _context_copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.state.context)


def result_text(result: Any) -> str:
    """A tool result's text: its text parts, else its parts' data as JSON-ish text."""
    parts = getattr(getattr(result, "result", None), "parts", None) or []
    texts = []
    for part in parts:
        content = getattr(part, "content", None)
        if isinstance(content, str):
            texts.append(content)
        elif getattr(part, "data", None) is not None:
            texts.append(str(part.data))
    return "\n".join(texts)
