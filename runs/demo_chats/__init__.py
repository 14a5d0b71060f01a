"""The GeneratorChat demo as real AG2 runs with scripted, LLM-free agents: AG2 1.x
(``ag2_workflow``, turns scripted with ``ag2.testing.TestConfig`` in ``ag2_scripted``) and AG2
Classic (``autogen_chat``, ``autogen_scripted``), with the facts both share (``generator``).

``manage.py demo_ag2`` runs them; the tests and the benchmarks drive them too. They are the
product's demo, not part of the SDK: they read the demo workflow from ``contextadmin/demo/``.
"""
