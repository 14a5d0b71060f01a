"""One run seen by the AG2 1.x adapter: what both its session kinds share.

A session folds what AG2 does into a ``RunState`` (``SessionCore``, shared with the Classic
adapter) through ``on_text`` / ``on_tool`` / ``sync`` and ends the run on leaving ``with`` (or
``async with``). Nothing here raises into the workflow: a failure to observe is logged once and
the run goes on.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any, Self

import ag2
from ag2.events import ToolErrorEvent

from contextadmin_sdk.client.definitions import runtime_info
from contextadmin_sdk.engine import TEXT_MAX_CHARS, Flip
from contextadmin_sdk.integrations.session_core import SessionCore

__all__ = ["RunSession", "error_text", "result_text", "runtime"]

logger = logging.getLogger("contextadmin_sdk.integrations.ag2")


def runtime() -> dict[str, str]:
    """What reports the run: ``{"framework": "ag2", "version": ..., "sdk": ...}`` (the run
    header shows it)."""
    return runtime_info(framework="ag2", version=ag2.__version__)


class RunSession(SessionCore):
    """What both 1.x sessions share: ``SessionCore`` (the run's bookkeeping, ``with session:``),
    ``async with session:``, and the folds ``on_text`` / ``on_tool`` / ``sync``."""

    _log = logger

    def __init__(self, **common: Any) -> None:
        super().__init__(**common)
        self._declared = set(self.config.categories())
        self._resume_running()  # a resumed run: where it resumed (a paused one: running again)

    async def __aenter__(self) -> Self:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self._finish(raised=exc_type is not None)
        status = "completed" if exc_type is None else "paused"
        await asyncio.to_thread(self.end, status)  # the flush waits: not on the workflow's loop

    def _finish(self, *, raised: bool) -> None:
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
        applied = self._emit_tool_response(agent=agent, tool=tool, success=success, text=text)
        return applied.flips if applied is not None else []

    def sync(
        self, data: Mapping[str, Any], *, agent: str | None = None, tool: str | None = None
    ) -> list[Flip]:
        """Report what the workflow changed in its context (a tool's ``set_context``): a
        declared variable's change is a ``context_set`` (a derived flag set to a boolean is a
        flip), a refused one a ``warning`` (in ``session.warnings`` too)."""
        return self._sync_changes(data, agent=agent, tool=tool)

    def _failed(self, what: str) -> None:
        """Log (once per kind) an observation that failed; the workflow goes on."""
        if f"fail:{what}" not in self._warned:
            self._warned.add(f"fail:{what}")
            logger.exception("could not observe %s; the workflow goes on", what)

    def _context_copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.state.context)


def result_text(result: Any) -> str:
    """A tool result's text: its text parts, else its parts' data as JSON-ish text. A failed
    tool's (``ToolErrorEvent``) is its error's ``Type: message``: AG2 puts the whole traceback
    in the result, whose file paths are the runtime's, not the run's to show or store."""
    if isinstance(result, ToolErrorEvent):
        return error_text(result.error)
    parts = getattr(getattr(result, "result", None), "parts", None) or []
    texts = []
    for part in parts:
        content = getattr(part, "content", None)
        if isinstance(content, str):
            texts.append(content)
        elif getattr(part, "data", None) is not None:
            texts.append(str(part.data))
    return "\n".join(texts)


def error_text(error: BaseException) -> str:
    """``RuntimeError: disk full`` (just the type when the message is empty)."""
    try:
        message = str(error)
    except Exception:  # a hostile __str__: the type still says what failed
        message = ""
    name = type(error).__name__
    return f"{name}: {message}" if message else name
