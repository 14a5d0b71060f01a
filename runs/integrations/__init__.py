"""Adapters that attach contextadmin's engine and reporter to agent runtimes (``autogen`` for
AG2 Classic, ``ag2`` for AG2 1.x); ``context_sync`` is what both report of a chat's own context
changes (a ``context_set``, or a ``warning`` when the run may not take it)."""
