"""The AG2 session: seed the pattern's ContextVariables, flip from the chat's events, route
hand-offs, report the run (docs/ag2.md).

How the pieces fit:

- **Events.** ``with session:`` installs an ``IOStream`` (``IOStream.set_default``, restored
  on exit) that sees every event AG2 emits *on the chat's own thread*, synchronously, and then
  passes it on to the stream that was there before (the console, usually). Each event is
  folded into a ``RunState`` (the same fold the server runs, wrapping ``DerivedContextManager``
  unchanged) before AG2 chooses the next speaker, so a flag flipped by a turn can route the
  turn right after it. ``run_group_chat()``, ``a_run_group_chat()`` and
  ``run_group_chat_iter()`` run the chat on a thread (or task) of their own, with a stream of
  their own: the session wraps the pattern's ``prepare_group_chat``, which every entry point
  calls on the chat's own thread, and installs its stream there too (``_chat_starting``).
- **Mapping.** ``TextEvent`` -> ``agent_text`` (the transit message ``"[Handing off to X]"``
  is not a turn: it becomes the ``handoff`` event instead); a tool's ``ToolResponseEvent``,
  matched to its ``ToolCallEvent`` by call id, -> ``tool_response`` with status ``success`` or
  ``error`` from AG2's ``ExecutedFunctionEvent`` (the flip waits for the response event because
  a ``ReplyResult``'s context is merged after the executed-function event); AG2's transition
  events to another agent -> ``handoff`` (with the rule index when one of ours fired); a
  change a tool or reply function made to a declared variable -> ``context_set`` naming the tool
  or agent (a derived flag set to a boolean is a flip), or a ``warning`` when the run may not
  take it, and the run's value is put back into the chat's context
  (``contextadmin_sdk.integrations.context_sync``).
- **Hand-offs.** Each config rule becomes two ``OnContextCondition`` registrations on its
  source agent (see ``handoffs.handoff_register`` for why both).
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Iterator
from typing import Any, Unpack

from contextadmin_sdk.client.definitions import runtime_info
from contextadmin_sdk.engine import (
    TEXT_MAX_CHARS,
    Flip,
)
from contextadmin_sdk.integrations.common import (
    ConfigArg,
    HandoffRuleError,
    RunOptions,
    open_run,
    text_of,
)
from contextadmin_sdk.integrations.session_core import SessionCore

try:
    import autogen
    from autogen import ConversableAgent
    from autogen.agentchat.group import ContextExpression, ContextVariables
    from autogen.events.base_event import BaseEvent
    from autogen.io import IOStream
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "contextadmin_sdk.integrations.autogen needs AG2 Classic 0.14.x (autogen>=0.14,<0.15): "
        'pip install "./sdk[autogen]" from a checkout of contextadmin'
    ) from exc

from .handoffs import after_works_restore, fired_rule, handoff_register, handoffs_clear
from .internals import stream_put_in_front

__all__ = ["SUPPORTED_AG2", "AG2Session", "HandoffRuleError", "attach"]

logger = logging.getLogger(__name__)

SUPPORTED_AG2 = ">=0.14,<0.15"
TOOL_EXECUTOR_PREFIX = "_Group_Tool_Executor"
TEMP_USER = "_User"  # the user proxy AG2 creates when the pattern has none
TRANSITION_EVENTS = {
    "OnContextConditionTransitionEvent": "context_conditions",
    "AfterWorksTransitionEvent": "after_works",
    "OnConditionLLMTransitionEvent": None,
    "ReplyResultTransitionEvent": None,
}
REPLY_RESULT = "ReplyResultTransitionEvent"
_SESSION = "_contextadmin_session"  # on a pattern: the session attached to it last

if not autogen.__version__.startswith("0.14."):  # pragma: no cover
    logger.warning(
        "contextadmin_sdk.integrations.autogen is tested with ag2 %s; this is %s",
        SUPPORTED_AG2,
        autogen.__version__,
    )


def attach(pattern: Any, config: ConfigArg, **options: Unpack[RunOptions]) -> AG2Session:
    """Seed ``pattern.context_variables`` from ``config``, register its hand-offs, and return the
    session whose ``with`` block observes the chat.

    ``options`` (``workflow_name`` and ``enterprise_id`` required; ``environ``, ``mongo``,
    ``reporter``, ``run_id``, ``spool_dir``, ``capacity``, ``flush_timeout``) are
    ``contextadmin_sdk.integrations.common.RunOptions``: ``run_id`` (with a ``reporter``)
    resumes that run from the server's state and the spool.
    """
    _refuse_ag2x(pattern)
    opened = open_run(
        config,
        agents=[agent.name for agent in pattern.agents],
        where="the pattern",
        runtime=runtime_info(framework="autogen", version=autogen.__version__),
        options=options,
    )
    session = AG2Session(pattern=pattern, opened=opened)
    session._resume_running()  # a resumed run: where it resumed (a paused one: running again)
    return session


def _refuse_ag2x(pattern: Any) -> None:
    """An AG2 1.x object (``import ag2``) belongs to the 1.x adapter: say so."""
    module = type(pattern).__module__
    if module == "ag2" or module.startswith("ag2."):
        raise TypeError(
            f"attach() got an AG2 1.x {type(pattern).__name__}: "
            "contextadmin_sdk.integrations.autogen attaches "
            "to AG2 Classic group chats (a Pattern); use "
            "contextadmin_sdk.integrations.ag2.attach for AG2 1.x workflows and agents"
        )
    if not hasattr(pattern, "agents") or not hasattr(pattern, "context_variables"):
        raise TypeError(
            f"attach() takes an AG2 Classic Pattern (autogen.agentchat.group.patterns), got "
            f"{type(pattern).__name__}"
        )
    agents = pattern.agents
    if not isinstance(agents, list | tuple) or not all(
        isinstance(agent, ConversableAgent) for agent in agents
    ):
        raise TypeError(
            "attach(): the pattern's agents must be a list of ConversableAgents, not "
            f"{type(agents).__name__}"
        )
    if not isinstance(pattern.context_variables, ContextVariables):
        raise TypeError(
            "attach(): the pattern's context_variables must be an "
            "autogen.agentchat.group.ContextVariables (AG2 shares that one object with every "
            f"agent), not {type(pattern.context_variables).__name__}"
        )


class _ObservingStream:
    """An AG2 IOStream that shows every event to the session, then to the previous stream."""

    def __init__(self, session: AG2Session, previous: Any) -> None:
        self.session = session
        self.previous = previous

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        self.previous.print(*objects, sep=sep, end=end, flush=flush)

    def send(self, message: Any) -> None:
        if self.session._observing:
            self.session.observe(message)
        self.previous.send(message)

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        result: str = self.previous.input(prompt, password=password)
        return result


class _AsyncObservingStream(_ObservingStream):
    """The same over an async stream (``a_run_group_chat``'s): AG2 awaits ``input`` only when
    it is a coroutine function, so the human's reply must be awaited here, not handed back as
    a coroutine."""

    async def input(self, prompt: str = "", *, password: bool = False) -> str:  # type: ignore[override]
        result: str = await self.previous.input(prompt, password=password)
        return result


def _observing(session: AG2Session, previous: Any) -> _ObservingStream:
    """A stream showing every event to ``session``, then to ``previous`` (sync or async)."""
    if inspect.iscoroutinefunction(getattr(previous, "input", None)):
        return _AsyncObservingStream(session, previous)
    return _ObservingStream(session, previous)


class AG2Session(SessionCore):
    """One run of a group chat seen by contextadmin (``SessionCore``). Made by ``attach``."""

    _log = logger

    def __init__(self, *, pattern: Any, **common: Any) -> None:
        super().__init__(**common)
        self.pattern = pattern
        self._tool_calls: dict[str, tuple[str, str]] = {}  # call id -> (tool, calling agent)
        self._executed: dict[str, bool] = {}  # call id -> success
        self._last_executed: str | None = None  # the call id of the latest tool AG2 ran
        self._transit: dict[str, str] = {}  # agent -> its expected "[Handing off to X]"
        self._rule_of: dict[int, int] = {}  # id(OnContextCondition) -> rule index
        self._stream_cm: Any = None  # IOStream.set_default(...) while inside `with`
        self._observing = False  # inside `with session:`
        self._seed_context()
        self._register_handoffs()
        _prepare_hook(pattern, self)

    @property
    def context(self) -> Any:
        """The pattern's own ``ContextVariables`` (shared with every agent), never replaced."""
        return self.pattern.context_variables

    def _begin(self) -> None:
        previous = IOStream.get_default()
        self._stream_cm = IOStream.set_default(_observing(self, previous))
        self._stream_cm.__enter__()
        self._observing = True

    def _finish(self, *, raised: bool) -> None:
        self._observing = False
        self._stream_cm.__exit__(None, None, None)
        if self.observed == 0 and not raised:
            self._warn_once(
                "no-events",
                "the session observed no AG2 events: run the chat (initiate_group_chat, "
                "run_group_chat, their a_ versions) inside `with session:`, and consume "
                "run_group_chat's events (or call response.process()) before leaving it",
            )

    def _chat_starting(self) -> None:
        """The pattern is preparing a chat, on the chat's own thread (or task): put back the
        rules the pattern dropped, and observe this thread's stream (``run_group_chat`` and
        ``a_run_group_chat`` install one of their own), so flips land before AG2 picks the next
        speaker whichever entry point runs the chat."""
        after_works_restore(self.pattern.agents)
        if not self._observing:
            ended = "its run has ended: attach() again for a new run" if self._ended else (
                "run the chat inside `with session:`"
            )
            self._warn_once(
                "outside",
                "a chat started on the attached pattern outside `with session:`: the session "
                f"does not observe it (no flag flips, nothing is reported); {ended}",
            )
            return
        current = IOStream.get_default()
        if isinstance(current, _ObservingStream) and current.session is self:
            return  # initiate_group_chat on the thread of `with session:`
        stream_put_in_front(_observing(self, current))  # for this chat's thread (or task)

    def _before_end(self) -> None:
        self._sync_context()

    # -- run_group_chat_iter ---------------------------------------------------------------------
    def iterate(self, response: Any) -> Iterator[Any]:
        """The events of ``run_group_chat_iter(...)`` (or ``run_group_chat(...)``), unchanged.

        Kept for code written against earlier versions: the session observes every chat's
        events on the chat's own thread, so iterating ``response.events`` (or ``response``)
        directly is the same.
        """
        events = response.events if type(response).__name__ == "RunResponse" else response
        yield from events

    # -- observing -------------------------------------------------------------------------------
    def observe(self, event: Any) -> None:
        """Fold one AG2 event into the run; never raises into the chat."""
        self.observed += 1
        try:
            kind = type(event).__name__
            inner = getattr(event, "content", None)
            if not isinstance(inner, BaseEvent):
                inner = event
            if kind == "TextEvent":
                self._on_text(inner)
            elif kind == "ToolCallEvent":
                self._on_tool_call(inner)
            elif kind == "ExecutedFunctionEvent":
                if inner.call_id is not None:
                    self._executed[inner.call_id] = bool(inner.is_exec_success)
                    self._last_executed = inner.call_id
            elif kind == "ToolResponseEvent":
                self._on_tool_response(inner)
            elif kind in TRANSITION_EVENTS:
                self._on_transition(inner, TRANSITION_EVENTS[kind], by_tool=kind == REPLY_RESULT)
        except Exception:
            if "observe" not in self._warned:
                self._warned.add("observe")
                logger.exception("could not observe an AG2 %s; the chat goes on", type(event))

    def _on_text(self, inner: Any) -> None:
        sender = inner.sender
        if sender.startswith(TOOL_EXECUTOR_PREFIX):
            return
        text = text_of(inner.content)
        if text is None:
            return
        transit = self._transit.pop(sender, None)
        if transit is not None and text == transit:
            return  # "[Handing off to X]": reported as the handoff, not a turn
        agent = "user" if sender == TEMP_USER else sender
        self._sync_context(agent=agent)  # what its reply function changed
        self._emit(
            {
                "type": "agent_text",
                "agent": agent,
                "text": text[:TEXT_MAX_CHARS],
            }
        )

    def _on_tool_call(self, inner: Any) -> None:
        for call in inner.tool_calls or []:
            if call.id is not None and call.function.name:
                self._tool_calls[call.id] = (call.function.name, inner.sender)
        text = text_of(inner.content)
        if text:  # a tool call with words is also a turn
            self._on_text(inner)

    def _on_tool_response(self, inner: Any) -> None:
        calls = [
            (response, self._tool_calls.pop(response.tool_call_id or "", None))
            for response in inner.tool_responses
        ]
        known = {call for _, call in calls if call is not None}
        tool, agent = next(iter(known)) if len(known) == 1 else (None, None)
        self._sync_context(agent=agent, tool=tool)  # a ReplyResult's context is merged in by now
        for response, call in calls:
            if call is None:
                continue
            tool, agent = call
            success = self._executed.pop(response.tool_call_id or "", True)
            text = text_of(response.content) or ""
            self._emit_tool_response(agent=agent, tool=tool, success=success, text=text)

    def _on_transition(self, inner: Any, where: str | None, *, by_tool: bool = False) -> None:
        """A hand-off to another agent. ``by_tool``: a tool's ``ReplyResult`` named the target;
        AG2 sends this before the tool's response, with the tool's context merged in, so what
        changed there is the tool's doing (a flip "set by tool T")."""
        source = inner.source_agent
        target = getattr(inner.transition_target, "agent_name", None)
        if not isinstance(target, str) or target == source.name:
            return
        event: dict[str, Any] = {"type": "handoff", "agent": source.name, "target": target}
        if where is not None:
            rule = fired_rule(
                source, getattr(source.handoffs, where), self._rule_of, target=target
            )
            if rule is not None:
                event["rule"] = rule
        if where == "context_conditions":
            self._transit[source.name] = (
                f"[Handing off to {inner.transition_target.display_name()}]"
            )
        call = self._tool_calls.get(self._last_executed or "") if by_tool else None
        self._sync_context(agent=source.name, tool=call[0] if call is not None else None)
        self._emit(event)

    # -- state -----------------------------------------------------------------------------------
    def _mirror(self, flips: list[Flip]) -> None:
        """Write flips into the pattern's ContextVariables: the chat routes on them."""
        data = self.context.data
        for flip in flips:
            data[flip.name] = flip.value

    def _sync_context(self, *, agent: str | None = None, tool: str | None = None) -> None:
        """Report what the chat changed in its own context (tools, reply functions), and put
        the run's value back where the run refused the change: AG2 picks the next speaker
        from this context after the event, and must not route on a value the run does not
        hold. The chat goes on either way."""
        data = self.context.data
        self._sync_changes(data, agent=agent, tool=tool)
        sets, deletes = self._sync.restore(data, self.state)
        for name in deletes:
            data.pop(name, None)
        data.update(sets)

    def _seed_context(self) -> None:
        """Write the run's context into the pattern's own ContextVariables (seed 001)."""
        context = self.pattern.context_variables
        for name, value in self.state.context.items():
            context.set(name, copy.deepcopy(value))
        for agent in [*self.pattern.agents, self.pattern.user_agent]:
            if agent is not None:
                agent.context_variables = context  # AG2 does it again when the chat starts

    def _register_handoffs(self) -> None:
        """Register each rule on its source agent (``handoffs.handoff_register``), but one naming
        a variable absent from this run's context (an environment variable in production) or
        that AG2 cannot parse: AG2's ContextExpression would raise mid-chat."""
        agents = {agent.name: agent for agent in self.pattern.agents}
        handoffs_clear(agents.values())  # a pattern attached before: drop that session's rules
        skip = self._unroutable()
        for index, rule in enumerate(self.config.handoffs):
            if index in skip:
                continue
            try:
                expression = ContextExpression(rule.condition)
            except (SyntaxError, ValueError) as exc:  # e.g. a name that is a Python keyword
                reason = f"AG2 cannot parse the condition: {exc}"
                message = f"hand-off {index} not registered: {reason}"
                self._skip_handoff(index, rule, reason, message)
                continue
            handoff_register(
                agents[rule.source_agent],
                agents[rule.target_agent],
                expression,
                index=index,
                rule_of=self._rule_of,
            )


def _prepare_hook(pattern: Any, session: AG2Session) -> None:
    """Make ``pattern.prepare_group_chat`` (called by every AG2 entry point, on the chat's own
    thread, before its first event) tell the session last attached to it that a chat starts."""
    setattr(pattern, _SESSION, session)
    if getattr(pattern.prepare_group_chat, _SESSION, False):
        return  # attached before: the hook reads the pattern's current session
    prepare = pattern.prepare_group_chat

    def prepare_group_chat(*args: Any, **kwargs: Any) -> Any:
        prepared = prepare(*args, **kwargs)
        current: AG2Session | None = getattr(pattern, _SESSION, None)
        if current is not None:
            try:
                current._chat_starting()
            except Exception:  # never into the chat
                current._log.exception("could not observe the chat starting; it goes on")
        return prepared

    setattr(prepare_group_chat, _SESSION, True)
    pattern.prepare_group_chat = prepare_group_chat
