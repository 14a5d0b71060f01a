"""Attach contextadmin to AG2 1.x (``pip install ag2``, the ``ag2`` extra). See docs/ag2.md.

    session = attach(graph, config, hub=hub, agents=[...], workflow_name="Generator",
                     enterprise_id="acme", reporter=RunReporter(url, token))
    with session:
        channel = await user.open(type=WORKFLOW_TYPE, target=[...], knobs=session.knobs())
        await user.send(channel.channel_id, "Hello")
        await session.finished()
    session.context, session.flips, session.run_id, session.completed_overview()

or ``attach(agent, config, ...)`` for a single ``ag2.Agent``. AG2 Classic group chats (the
``autogen`` package) attach with ``contextadmin_sdk.integrations.autogen``.
"""

try:
    import ag2 as _ag2  # noqa: F401
    from ag2.network import TransitionGraph as _TransitionGraph  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "contextadmin_sdk.integrations.ag2 needs AG2 1.x (ag2>=1.2,<1.3): pip install "
        '"./sdk[ag2]" from a checkout of contextadmin; for AG2 Classic group chats '
        "use contextadmin_sdk.integrations.autogen"
    ) from exc

from .entry import attach
from .graph import RULE_CONDITION, ContextRule
from .internals import SUPPORTED_AG2
from .session import AgentSession, HandoffRuleError, WorkflowSession

__all__ = [
    "RULE_CONDITION",
    "SUPPORTED_AG2",
    "AgentSession",
    "ContextRule",
    "HandoffRuleError",
    "WorkflowSession",
    "attach",
]
