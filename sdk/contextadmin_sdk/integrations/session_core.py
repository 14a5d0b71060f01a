"""What a session of either AG2 adapter keeps and does with its run, whatever AG2 it watches.

``ag2.run.RunSession`` (AG2 1.x) and ``autogen.session.AG2Session`` (AG2 Classic) both fold
what the chat does into a ``RunState`` (the same fold the server runs), report each run event to
the non-blocking ``RunReporter``, keep ``.events``, ``.flips``, ``.warnings`` and
``.skipped_handoffs``, and end the run on leaving ``with``. Each adapter adds how it watches its
AG2 (``_begin``/``_finish``) and, for Classic, how flips reach the chat's own context
(``_mirror``). Nothing here raises into the chat: a failure is a warning, logged once.
"""

from __future__ import annotations

import logging
from typing import Any, Self

from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.client.transport import MAX_EVENT_BYTES, encode_record, event_too_large
from contextadmin_sdk.engine import (
    RUN_STATUSES,
    TEXT_MAX_CHARS,
    Applied,
    EventError,
    Flip,
    RunState,
)
from contextadmin_sdk.engine.format import ContextVariablesFile, Handoff
from contextadmin_sdk.integrations.common import (
    OpenedRun,
    completed_overview,
    refusal_message,
    tool_data,
    unroutable_reason,
)
from contextadmin_sdk.integrations.context_sync import ContextSync

__all__ = ["SessionCore"]


class SessionCore:
    """One run of a chat seen by contextadmin: ``.state``, ``.events``, ``.flips``,
    ``.warnings``, ``.skipped_handoffs``, ``.run_id``, ``.completed_overview()``, and
    ``with session:`` ending the run (``completed``, or ``paused`` when the chat raised)."""

    _log = logging.getLogger("contextadmin_sdk.integrations")  # each adapter names its own

    def __init__(self, *, opened: OpenedRun) -> None:
        self.config: ContextVariablesFile = opened.config
        self.state: RunState = opened.state
        self.reporter: RunReporter | None = opened.reporter
        self.production = self.state.environment == "production"
        self.warnings = opened.warnings
        self.flush_timeout = opened.flush_timeout
        self.resumed = opened.resumed  # attach(run_id=...) took the run over
        self.events: list[dict[str, Any]] = list(opened.unsent)  # every run event, with its seq
        self.flips: list[Flip] = [
            Flip(f["name"], f["value"], f["trigger_index"], dict(f.get("cause") or {}))
            for f in self.state.flips
        ]
        self.skipped_handoffs: list[dict[str, Any]] = []
        self.observed = 0  # AG2 events seen
        self._sync = ContextSync(self.config, production=self.production)
        self._warned: set[str] = set()
        self._ended = False

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

    def __enter__(self) -> Self:
        self._begin()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self._finish(raised=exc_type is not None)
        # An exception out of the chat pauses the run: it can be resumed with run_id=...
        self.end("completed" if exc_type is None else "paused")

    def end(self, status: str = "completed") -> bool:
        """Report the run's status (``completed``, ``paused``, ``failed``...) and flush.

        Returns whether the server acknowledged everything within ``flush_timeout``. Another
        status is a ``ValueError``, before anything is reported: the run would stay open.
        """
        if status not in RUN_STATUSES:
            raise ValueError(
                f"end(): status must be one of {', '.join(RUN_STATUSES)}, not {status!r}"
            )
        if self._ended:
            return True
        self._before_end()
        self._emit({"type": "run_status", "status": status})
        if status != "paused":
            self._ended = True
        if self.reporter is None:
            return True
        return self.reporter.close(self.flush_timeout)

    # -- what an adapter adds --------------------------------------------------------------------
    def _begin(self) -> None:
        """Start observing (the adapter installs its hooks)."""

    def _finish(self, *, raised: bool) -> None:
        """Stop observing (the adapter removes its hooks)."""

    def _before_end(self) -> None:
        """What the adapter still reports before the run's status (its chat's last changes)."""

    def _mirror(self, flips: list[Flip]) -> None:
        """Show flips to the chat, where its context is not the run's state itself."""

    # -- run events ------------------------------------------------------------------------------
    def _resume_running(self) -> None:
        """A resumed run says so with a ``run_status`` of ``running`` (a paused one is running
        again): the server marks where it resumed on the run's path (``execution.resumes``),
        so the run page shows where the runtime before stopped and this one took over."""
        if self.resumed:
            self._emit({"type": "run_status", "status": "running"})

    def _emit(self, event: dict[str, Any]) -> Applied | None:
        """Apply one run event to the state, show its flips to the chat, report it; None when
        the run cannot take it (a warning, once per event type)."""
        try:
            applied = self.state.apply(event)
        except EventError as exc:
            self._warn_once(f"event:{event['type']}", f"not reported: {exc} ({event['type']})")
            return None
        event["seq"] = applied.seq
        self.events.append(event)
        if applied.flips:
            self._mirror(applied.flips)
            self.flips.extend(applied.flips)
        if self.reporter is not None:
            fields = {key: value for key, value in event.items() if key not in ("type", "seq")}
            self.reporter.event(event["type"], **fields)
        return applied

    def _emit_tool_response(
        self, *, agent: str, tool: str, success: bool, text: str
    ) -> Applied | None:
        """Fold a tool's response: its JSON object as data, else its text (cut to
        ``TEXT_MAX_CHARS``: a response larger than the server takes is folded as the server
        gets it, so the chat's state stays the inspector's)."""
        event = {
            "type": "tool_response",
            "agent": agent,
            "tool": tool,
            "status": "success" if success else "error",
            "data": tool_data(text),
        }
        # Only a long text can make data past the limit (re-encoded JSON grows at most ~4.5x,
        # "1e9" -> 1000000000.0): a short one skips the encode (the reporter encodes it anyway).
        encoded = encode_record(event) if len(text) > MAX_EVENT_BYTES // 8 else b""
        too_large = event_too_large(encoded, event_type="tool_response") is not None
        if too_large:
            self._warn_once(
                f"size:{tool}",
                f"tool {tool}: a response of {len(encoded):,} bytes as JSON is more than the "
                f"server takes (at most {MAX_EVENT_BYTES:,}): folded and reported as its text, "
                f"cut to {TEXT_MAX_CHARS:,} characters",
            )
        applied = None if too_large else self._emit(event)
        if applied is None:  # e.g. data too deep or too large: the response counts, as text
            applied = self._emit({**event, "data": {"content": text[:TEXT_MAX_CHARS]}})
        return applied

    def _sync_changes(
        self, data: Any, *, agent: str | None = None, tool: str | None = None
    ) -> list[Flip]:
        """Report what the chat changed in its own context (tools, reply functions): each
        declared variable as a ``context_set`` (a derived flag set to a boolean is a flip), or
        as a ``warning`` when the run may not take it (in ``session.warnings`` too)."""
        flips: list[Flip] = []
        for event in self._sync.changes(data, self.state, agent=agent, tool=tool):
            if event["type"] == "warning":
                message = refusal_message(event)
                self.warnings.append(message)
                self._log.warning("%s", message)
            applied = self._emit(event)
            if applied is not None:
                flips.extend(applied.flips)
        return flips

    # -- hand-off rules --------------------------------------------------------------------------
    def _unroutable(self) -> set[int]:
        """Rules naming a variable absent from this run's context never fire: say so once."""
        skip = set()
        for index, rule in enumerate(self.config.handoffs):
            reason = unroutable_reason(rule.condition, self.state.context)
            if reason is not None:
                self._skip_handoff(
                    index,
                    rule,
                    reason,
                    f"hand-off {index} ({rule.source_agent} -> {rule.target_agent} when "
                    f"{rule.condition}) never fires in this environment: {reason}",
                )
                skip.add(index)
        return skip

    def _skip_handoff(self, index: int, rule: Handoff, reason: str, message: str) -> None:
        entry = {"index": index, "condition": rule.condition, "reason": reason}
        self.skipped_handoffs.append(entry)
        self._warn_once(f"rule:{index}", message)

    def _warn_once(self, key: str, message: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        self.warnings.append(message)
        self._log.warning("%s", message)
