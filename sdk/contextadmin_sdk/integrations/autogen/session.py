"""The AG2 session: seed the pattern's ContextVariables, flip from the chat's events, route
hand-offs, report the run (docs/ag2.md).

How the pieces fit:

- **Events.** ``with session:`` installs an ``IOStream`` (``IOStream.set_default``, restored
  on exit) that sees every event AG2 emits *on the chat's own thread*, synchronously, and then
  passes it on to the stream that was there before (the console, usually). Each event is
  folded into a ``RunState`` (the same fold the server runs, wrapping ``DerivedContextManager``
  unchanged) before AG2 chooses the next speaker, so a flag flipped by a turn can route the
  turn right after it. ``run_group_chat()`` runs the chat on another thread and delivers
  events late: it is refused; ``run_group_chat_iter`` works through ``session.iterate()``.
- **Mapping.** ``TextEvent`` -> ``agent_text`` (the transit message ``"[Handing off to X]"``
  is not a turn: it becomes the ``handoff`` event instead); a tool's ``ToolResponseEvent``,
  matched to its ``ToolCallEvent`` by call id, -> ``tool_response`` with status ``success`` or
  ``error`` from AG2's ``ExecutedFunctionEvent`` (the flip waits for the response event because
  a ``ReplyResult``'s context is merged after the executed-function event); AG2's transition
  events to another agent -> ``handoff`` (with the rule index when one of ours fired); a
  change a tool or reply function made to a declared variable -> ``context_set`` naming the tool
  or agent (a derived flag set to a boolean is a flip), or a ``warning`` when the run may not
  take it (``contextadmin_sdk.integrations.context_sync``: nothing the chat changes is dropped
  silently).
- **Hand-offs.** Each config rule becomes two ``OnContextCondition`` registrations on its
  source agent (see ``_register_handoffs`` for why both).
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any

from contextadmin_sdk.client import RunReporter
from contextadmin_sdk.client.definitions import runtime_info
from contextadmin_sdk.engine import (
    TEXT_MAX_CHARS,
    EventError,
    Flip,
    RunState,
)
from contextadmin_sdk.engine.format import ContextVariablesFile
from contextadmin_sdk.integrations.common import (
    ConfigArg,
    HandoffRuleError,
    check_rules,
    completed_overview,
    load_config_arg,
    open_run,
    refusal_message,
    text_of,
    tool_data,
    unroutable_reason,
)
from contextadmin_sdk.integrations.context_sync import ContextSync

try:
    import autogen
    from autogen.agentchat.group import (
        AgentTarget,
        ContextExpression,
        ExpressionContextCondition,
        OnContextCondition,
    )
    from autogen.events.base_event import BaseEvent
    from autogen.io import IOStream
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "contextadmin_sdk.integrations.autogen needs AG2 Classic 0.14.x: "
        'pip install -e ".[autogen]" (autogen>=0.14,<0.15)'
    ) from exc

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
_REGISTERED = "_contextadmin_handoffs"  # on an agent: the conditions a session added to it

if not autogen.__version__.startswith("0.14."):  # pragma: no cover
    logger.warning(
        "contextadmin_sdk.integrations.autogen is tested with ag2 %s; this is %s",
        SUPPORTED_AG2,
        autogen.__version__,
    )


def attach(
    pattern: Any,
    config: ConfigArg,
    *,
    workflow_name: str,
    enterprise_id: str,
    environ: Mapping[str, str] | None = None,
    mongo: Any = None,
    reporter: RunReporter | None = None,
    run_id: str | None = None,
    spool_dir: str | os.PathLike[str] | None = None,
    capacity: int | None = None,
    flush_timeout: float = 5.0,
) -> AG2Session:
    """Seed ``pattern.context_variables`` from ``config``, register its hand-offs, and return the
    session whose ``with`` block observes the chat.

    ``run_id`` (with a ``reporter``) resumes that run from the server's state and the spool.
    ``spool_dir`` and ``capacity`` configure the reporter's background mode
    (sdk/contextadmin_sdk/client/reporter.py);
    ``flush_timeout`` bounds how long leaving the ``with`` block waits for acknowledgements.
    """
    _refuse_ag2x(pattern)
    parsed = load_config_arg(config)
    environ = os.environ if environ is None else environ
    agents = {agent.name: agent for agent in pattern.agents}
    check_rules(parsed, agents, where="the pattern")
    opened = open_run(
        parsed,
        workflow_name=workflow_name,
        enterprise_id=enterprise_id,
        environ=environ,
        mongo=mongo,
        reporter=reporter,
        run_id=run_id,
        spool_dir=spool_dir,
        capacity=capacity,
        runtime=runtime_info(framework="autogen", version=autogen.__version__),
    )
    state, unsent, warnings = opened.state, opened.unsent, opened.warnings
    session = AG2Session(
        pattern=pattern,
        config=parsed,
        state=state,
        reporter=reporter,
        production=state.environment == "production",
        warnings=warnings,
        flush_timeout=flush_timeout,
        replayed=unsent,
    )
    if session.state.get("execution.status") == "paused":  # a chat that raised: running again
        session._emit({"type": "run_status", "status": "running"})
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


class _ObservingStream:
    """An AG2 IOStream that shows every event to the session, then to the previous stream."""

    def __init__(self, session: AG2Session, previous: Any) -> None:
        self.session = session
        self.previous = previous

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        self.previous.print(*objects, sep=sep, end=end, flush=flush)

    def send(self, message: Any) -> None:
        self.session.observe(message)
        self.previous.send(message)

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        result: str = self.previous.input(prompt, password=password)
        return result


class AG2Session:
    """One run of a group chat seen by contextadmin. Made by ``attach``."""

    def __init__(
        self,
        *,
        pattern: Any,
        config: ContextVariablesFile,
        state: RunState,
        reporter: RunReporter | None,
        production: bool,
        warnings: list[str],
        flush_timeout: float,
        replayed: list[dict[str, Any]],
    ) -> None:
        self.pattern = pattern
        self.config = config
        self.state = state
        self.reporter = reporter
        self.production = production
        self.warnings = warnings
        self.flush_timeout = flush_timeout
        self.events: list[dict[str, Any]] = list(replayed)  # every run event, with its seq
        self.flips: list[Flip] = [
            Flip(f["name"], f["value"], f["trigger_index"], dict(f.get("cause") or {}))
            for f in state.flips
        ]
        self.skipped_handoffs: list[dict[str, Any]] = []
        self.observed = 0  # AG2 events seen
        self._sync = ContextSync(config, production=production)
        self._tool_calls: dict[str, tuple[str, str]] = {}  # call id -> (tool, calling agent)
        self._executed: dict[str, bool] = {}  # call id -> success
        self._transit: dict[str, str] = {}  # agent -> its expected "[Handing off to X]"
        self._rule_of: dict[int, int] = {}  # id(OnContextCondition) -> rule index
        self._warned: set[str] = set()
        self._stream_cm: Any = None  # IOStream.set_default(...) while inside `with`
        self._ended = False
        self._seed_context()
        self._register_handoffs()

    # -- the contract ----------------------------------------------------------------------------
    @property
    def context(self) -> Any:
        """The pattern's own ``ContextVariables`` (shared with every agent), never replaced."""
        return self.pattern.context_variables

    @property
    def run_id(self) -> str | None:
        """The server's run id (None without a reporter)."""
        return self.reporter.run_id if self.reporter is not None else None

    def completed_overview(self) -> str:
        """Say which derived milestones this run has reached, and by which event (seed 003).

        Send it to the agent that continues a resumed run, so it does not redo them.
        """
        return completed_overview(self.config, self.state)

    def __enter__(self) -> AG2Session:
        previous = IOStream.get_default()
        self._stream_cm = IOStream.set_default(_ObservingStream(self, previous))
        self._stream_cm.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stream_cm.__exit__(exc_type, exc, tb)
        if self.observed == 0 and exc_type is None:
            self._warn_once(
                "no-events",
                "the session observed no AG2 events: run the chat inside `with session:` on this "
                "thread (initiate_group_chat), or iterate run_group_chat_iter through "
                "session.iterate(); run_group_chat() runs it on another thread",
            )
        # An exception out of the chat pauses the run: it can be resumed with run_id=...
        self.end("completed" if exc_type is None else "paused")

    def end(self, status: str = "completed") -> bool:
        """Report the run's status (``completed``, ``paused``, ``failed``...) and flush.

        Returns whether the server acknowledged everything within ``flush_timeout``.
        """
        if self._ended:
            return True
        self._sync_context()
        self._emit({"type": "run_status", "status": status})
        if status != "paused":
            self._ended = True
        if self.reporter is None:
            return True
        return self.reporter.close(self.flush_timeout)

    # -- run_group_chat_iter ---------------------------------------------------------------------
    def iterate(self, response: Any) -> Iterator[Any]:
        """Observe the events of ``run_group_chat_iter(...)`` as you iterate them.

        Its chat thread waits for each ``next()``, so flips still land before the next speaker
        is chosen. Iterate every event (no ``yield_on``), or flags may miss their events.
        """
        if not hasattr(response, "_start_thread_func") and type(response).__name__ == "RunResponse":
            raise TypeError(
                "run_group_chat() runs the chat on its own thread and its events arrive after "
                "the next speaker is chosen: use initiate_group_chat inside `with session:`, or "
                "run_group_chat_iter with session.iterate()"
            )
        for event in response:
            self.observe(event)
            yield event

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
            elif kind == "ToolResponseEvent":
                self._on_tool_response(inner)
            elif kind in TRANSITION_EVENTS:
                self._on_transition(inner, TRANSITION_EVENTS[kind])
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
            event = {
                "type": "tool_response",
                "agent": agent,
                "tool": tool,
                "status": "success" if success else "error",
                "data": tool_data(text),
            }
            if not self._emit(event):
                self._emit({**event, "data": {"content": text[:TEXT_MAX_CHARS]}})

    def _on_transition(self, inner: Any, where: str | None) -> None:
        source = inner.source_agent
        target = getattr(inner.transition_target, "agent_name", None)
        if not isinstance(target, str) or target == source.name:
            return
        event: dict[str, Any] = {"type": "handoff", "agent": source.name, "target": target}
        if where is not None:
            rule = self._fired_rule(source, getattr(source.handoffs, where))
            if rule is not None:
                event["rule"] = rule
        if where == "context_conditions":
            self._transit[source.name] = (
                f"[Handing off to {inner.transition_target.display_name()}]"
            )
        self._sync_context(agent=source.name)
        self._emit(event)

    def _fired_rule(self, agent: Any, conditions: Iterable[Any]) -> int | None:
        """The index of our rule among the conditions AG2 just fired, replaying its first-match."""
        for condition in conditions:
            if condition.available is not None:
                continue  # ours never have one; AG2 judged the user's own with the messages
            try:
                holds = condition.condition is None or condition.condition.evaluate(
                    agent.context_variables
                )
            except Exception:
                holds = False
            if holds:
                return self._rule_of.get(id(condition))
        return None

    # -- state -----------------------------------------------------------------------------------
    def _emit(self, event: dict[str, Any]) -> bool:
        """Apply one run event to the state, mirror its flips into the chat, report it."""
        try:
            applied = self.state.apply(event)
        except EventError as exc:
            self._warn_once(f"event:{event['type']}", f"not reported: {exc} ({event['type']})")
            return False
        event["seq"] = applied.seq
        self.events.append(event)
        if applied.flips:
            data = self.context.data
            for flip in applied.flips:
                data[flip.name] = flip.value
            self.flips.extend(applied.flips)
        if self.reporter is not None:
            fields = {key: value for key, value in event.items() if key not in ("type", "seq")}
            self.reporter.event(event["type"], **fields)
        return True

    def _sync_context(self, *, agent: str | None = None, tool: str | None = None) -> None:
        """Report what the chat changed in its own context (tools, reply functions): each
        declared variable as a ``context_set``, or as a ``warning`` when the run may not take
        it (the chat goes on either way; the warning is in ``session.warnings`` too)."""
        for event in self._sync.changes(self.context.data, self.state, agent=agent, tool=tool):
            if event["type"] == "warning":
                message = refusal_message(event)
                self.warnings.append(message)
                logger.warning("%s", message)
            self._emit(event)

    def _seed_context(self) -> None:
        """Write the run's context into the pattern's own ContextVariables (seed 001)."""
        context = self.pattern.context_variables
        for name, value in self.state.context.items():
            context.set(name, copy.deepcopy(value))
        for agent in [*self.pattern.agents, self.pattern.user_agent]:
            if agent is not None:
                agent.context_variables = context  # AG2 does it again when the chat starts

    def _register_handoffs(self) -> None:
        """Register each rule as an OnContextCondition on its source agent, twice.

        - ``handoffs.add_after_work``: AG2 evaluates after-work conditions as soon as the source
          agent's turn ends, so the turn that flips the flag is followed directly by the target
          (no transit message). ``add_after_work`` keeps the agent's unconditional after-work
          (``set_after_work``) last, so ours are tried first.
        - ``handoffs.add_context_condition``: AG2 evaluates these when the source agent is about
          to speak, before its reply. That covers flips made elsewhere: a tool's response (AG2
          returns to the caller, which then hands off at once) or another agent's turn.

        Either way the chat routes on the turn right after the flip. A rule naming a variable
        absent from this run's context (an environment variable in production) is not
        registered: AG2's ContextExpression would raise KeyError mid-chat.
        """
        agents = {agent.name: agent for agent in self.pattern.agents}
        for agent in agents.values():  # a pattern attached before: drop that session's rules
            previous = getattr(agent, _REGISTERED, None)
            if previous:
                ids = {id(condition) for condition in previous}
                handoffs = agent.handoffs
                handoffs.context_conditions = [
                    c for c in handoffs.context_conditions if id(c) not in ids
                ]
                handoffs.after_works = [c for c in handoffs.after_works if id(c) not in ids]
            setattr(agent, _REGISTERED, [])
        for index, rule in enumerate(self.config.handoffs):
            reason = unroutable_reason(rule.condition, self.state.context)
            if reason is not None:
                self.skipped_handoffs.append(
                    {"index": index, "condition": rule.condition, "reason": reason}
                )
                self._warn_once(
                    f"rule:{index}",
                    f"hand-off {index} ({rule.source_agent} -> {rule.target_agent} when "
                    f"{rule.condition}) never fires in this environment: {reason}",
                )
                continue
            try:
                expression = ContextExpression(rule.condition)
            except (SyntaxError, ValueError) as exc:  # e.g. a name that is a Python keyword
                reason = f"AG2 cannot parse the condition: {exc}"
                self.skipped_handoffs.append(
                    {"index": index, "condition": rule.condition, "reason": reason}
                )
                self._warn_once(f"rule:{index}", f"hand-off {index} not registered: {reason}")
                continue
            source, target = agents[rule.source_agent], agents[rule.target_agent]
            for add in (source.handoffs.add_after_work, source.handoffs.add_context_condition):
                condition = OnContextCondition(
                    target=AgentTarget(target),
                    condition=ExpressionContextCondition(expression),
                )
                add(condition)
                self._rule_of[id(condition)] = index
                getattr(source, _REGISTERED).append(condition)

    def _warn_once(self, key: str, message: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        self.warnings.append(message)
        logger.warning("%s", message)
