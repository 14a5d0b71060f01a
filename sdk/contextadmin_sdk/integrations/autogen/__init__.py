"""Attach contextadmin to an AG2 group chat (ag2 0.14.x, the ``autogen`` package). See docs/ag2.md.

    session = attach(pattern, config, workflow_name="Generator", enterprise_id="acme",
                     reporter=RunReporter(url, token))
    with session:
        initiate_group_chat(pattern=pattern, messages="...", max_rounds=20)
    session.context, session.flips, session.run_id, session.completed_overview()

AG2 Classic is an optional extra (``pip install "./sdk[autogen]"``); importing this package
without it raises an ImportError that says so.
"""

from .session import SUPPORTED_AG2, AG2Session, HandoffRuleError, attach

__all__ = ["SUPPORTED_AG2", "AG2Session", "HandoffRuleError", "attach"]
