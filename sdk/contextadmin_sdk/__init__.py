"""contextadmin's SDK: what an agent runtime installs (no Django).

- ``contextadmin_sdk.engine``: the context engine (the format, loader, derived flags,
  conditions, templates, run state and replay);
- ``contextadmin_sdk.client``: ``RunReporter``, which reports a run to a contextadmin server;
- ``contextadmin_sdk.integrations.ag2`` / ``.autogen``: attach to AG2 1.x or AG2 Classic.
"""

__version__ = "0.1.0"
