"""The GeneratorChat demo as real AG2 runs with scripted, LLM-free agents: AG2 1.x
(``ag2_workflow``) and AG2 Classic (``autogen_chat``), with the facts both share
(``generator``); their LLM-free agents come from the SDK's ``integrations.*.scripted``.

``manage.py demo_ag2`` runs them; the tests and the benchmarks drive them too. They are the
product's demo, not part of the SDK: they read the demo workflow from ``contextadmin/demo/``.
"""
