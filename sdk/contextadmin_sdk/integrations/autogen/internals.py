"""The one piece of AG2 Classic's internals the Classic adapter uses, in one module, pinned
(``session.SUPPORTED_AG2``) and checked by ``tests/sdk/integrations/test_autogen_internals.py``.

``IOStream._default_io_stream``, the context variable behind ``IOStream.get_default()``.
``run_group_chat`` runs the chat on a thread of its own (``a_run_group_chat``: a task) inside
``with IOStream.set_default(its_stream)``. The session sees the chat start there, in the hook
of ``Pattern.prepare_group_chat``, and puts its observing stream in front of AG2's for the
rest of that thread's (task's) chat. The public ``IOStream.set_default`` is a context manager,
which cannot span a chat from a hook inside it; setting the variable in the chat's own context
can, and AG2's ``with`` resets it to what it was when the chat ends.
"""

from __future__ import annotations

from typing import Any

from autogen.io import IOStream

__all__ = ["stream_put_in_front"]


def stream_put_in_front(stream: Any) -> None:
    """Make ``stream`` this thread's (task's) default IOStream until the enclosing
    ``IOStream.set_default`` block of AG2's ends."""
    IOStream._default_io_stream.set(stream)
