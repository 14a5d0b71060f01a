"""Where the 1.x adapter watches AG2, and why there.

- **Agent turns and tools: an agent middleware** (``ag2.Middleware``'s protocol: a factory
  returning a ``BaseMiddleware``), installed once per agent with ``insert_middleware``.
  ``on_tool_execution`` sees each tool's result (tool calls and results never become
  envelopes); ``on_turn`` sees the turn's final response. Both run inside the agent's turn,
  *before* the workflow handler posts the turn's packet. A flag flipped there is posted to the
  channel at once as ``EV_CONTEXT_SET`` (through the turn's own ``Channel``), so the graph folds
  the packet with the flag already set and routes on the very next turn. A hub listener would
  be one turn late: the graph picks the next speaker while it folds the packet, before any
  listener runs.
- **A human participant's text: the hub's arbiter** (``Hub.register_arbiter``, wrapping the
  one installed): ``authorize_send`` sees the envelope before the graph folds it, so a flag
  the text flips is posted to ``context_vars`` first, and routes on the very next turn too.
- **The speaker the graph chose: the hub's workflow adapter** (``Hub.register_adapter``,
  wrapping the one the channel runs on; every fold stays the wrapped one's): the state each
  packet (or human text) folded to is shown to the session inside the fold, under the
  channel's lock, so the ``handoff`` names the speaker and rule the graph routed on, before
  the next speaker can act. A hub listener runs after dispatch and after every listener
  registered before it: one that awaits I/O lets the next turns fold first, and the state it
  reads then is a later one (another rule, or a hand-off reported after its target spoke).
- **The channel's own traffic: a hub listener** (``Hub.register_listener``) for what only the
  hub sees: the context a tool set (``set_context`` posts ``EV_CONTEXT_SET``) and the channel
  closing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ag2.middleware import BaseMiddleware, MiddlewareDescription
from ag2.network import BaseHubListener, Deny

if TYPE_CHECKING:
    from .session import Observer

__all__ = ["SessionArbiter", "SessionHook", "SessionListener", "SessionTap", "hook_of", "unwrap"]


class SessionHook:
    """An agent's middleware factory; each turn is observed by the attached session watching
    its channel (an agent may take part in several workflows at once, one run each)."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.sessions: list[Observer] = []  # attached now, each watching its own channel

    def __call__(self, event: Any, context: Any) -> BaseMiddleware:
        return _TurnObserver(event, context, hook=self)

    def describe(self) -> MiddlewareDescription:
        return MiddlewareDescription(kind="contextadmin.SessionHook", config={"agent": self.agent})


def hook_of(agent: Any) -> SessionHook:
    """The agent's contextadmin hook, installed (outermost) the first time."""
    for entry in agent.middleware:
        if isinstance(entry.middleware, SessionHook):
            hook: SessionHook = entry.middleware
            return hook
    hook = SessionHook(agent.name)
    agent.insert_middleware(hook)
    return hook


class _TurnObserver(BaseMiddleware):
    def __init__(self, event: Any, context: Any, *, hook: SessionHook) -> None:
        super().__init__(event, context)
        self.hook = hook
        self.session = next((each for each in hook.sessions if each.watching(context)), None)

    async def on_turn(self, call_next: Any, event: Any, context: Any) -> Any:
        session = self.session
        if session is None:
            return await call_next(event, context)
        session.turn_started(self.hook.agent, context)
        response = await call_next(event, context)
        if session in self.hook.sessions:  # a turn still running when its run ended: not the run's
            await session.turn_ended(self.hook.agent, response, context)
        return response

    async def on_tool_execution(self, call_next: Any, event: Any, context: Any) -> Any:
        session = self.session
        if session is None:
            return await call_next(event, context)
        session.tool_started(self.hook.agent, event)
        try:
            result = await call_next(event, context)
        finally:
            session.tool_started(self.hook.agent, None)
        if session in self.hook.sessions:
            await session.tool_ended(self.hook.agent, event, result, context)
        return result


class SessionListener(BaseHubListener):
    """The hub's envelopes of one session's channel (matched by its knobs' marker)."""

    def __init__(self, session: Observer, marker: tuple[str, str]) -> None:
        self.session = session
        self.key, self.value = marker

    async def on_envelope_posted(self, envelope: Any, metadata: Any) -> None:
        if (metadata.knobs or {}).get(self.key) == self.value:
            await self.session.envelope_posted(envelope, metadata)

    async def on_channel_event(self, channel_id: str, kind: str, payload: dict[str, Any]) -> None:
        metadata = payload.get("metadata")
        ours = metadata is not None and (metadata.knobs or {}).get(self.key) == self.value
        if kind in ("closed", "expired") and ours:
            self.session.channel_closed(str(payload.get("reason") or kind))


class SessionArbiter:
    """The hub's arbiter, wrapped: every decision is the wrapped one's; an allowed send is
    shown to the session before the hub folds it."""

    def __init__(self, session: Observer, inner: Any) -> None:
        self.session: Observer | None = session  # None once the session ended: a pass-through
        self.inner = inner

    async def authorize_send(self, envelope: Any, sender: Any, rule: Any, recipients: Any) -> Any:
        decision = await self.inner.authorize_send(envelope, sender, rule, recipients)
        session = self.session
        if session is not None and not isinstance(decision, Deny):
            await session.before_fold(envelope)
        return decision

    def __getattr__(self, name: str) -> Any:  # authorize_inbox, authorize_dispatch, ...
        return getattr(self.inner, name)


class SessionTap:
    """The hub's adapter of the session's channel, wrapped: every fold is the wrapped one's;
    the state a substantive envelope of the channel folded to is shown to the session at
    once (``folded``), before any other envelope can fold."""

    def __init__(self, session: Observer, inner: Any) -> None:
        self.session: Observer | None = session  # None once the session ended: a pass-through
        self.inner = inner

    def fold(self, envelope: Any, state: Any) -> Any:
        new_state = self.inner.fold(envelope, state)
        session = self.session
        if session is not None:
            session.folded(envelope, new_state)
        return new_state

    def __getattr__(self, name: str) -> Any:  # manifest, validate_send, on_accepted, ...
        return getattr(self.inner, name)


def unwrap(outermost: Any, wrapper: SessionArbiter | SessionTap) -> Any:
    """What the hub should hold once ``wrapper`` (an ended session's) leaves the chain of
    session wrappers starting at ``outermost``: a session that ended before one attached after
    it is spliced out, so a long-lived hub's chain never grows with the runs it served."""
    if outermost is wrapper:
        return wrapper.inner
    node = outermost
    while isinstance(node, SessionArbiter | SessionTap):
        if node.inner is wrapper:
            node.inner = wrapper.inner
            break
        node = node.inner
    return outermost
