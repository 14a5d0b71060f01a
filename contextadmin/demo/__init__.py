"""The demo a newcomer gets from ``scripts/run``: two workflows, their scripted runs and the
MongoDB documents they read.

One owner for importing the demo workflows: ``manage.py demo_setup`` (every ``scripts/run``) and
``manage.py demo_ag2`` both call this module, so the two cannot drift apart.

- ``Generator`` (context_variables.json): the four categories of variables and one derived flag,
  no hand-offs. Its script (run_events.jsonl) has no hand-off events, so it replays into any
  workflow; the tests and benchmarks use it.
- ``GeneratorChat`` (ag2_context_variables.json): the same variables plus a tool trigger, a
  turn-count trigger and hand-offs between three agents: what the inspector's hand-off panels
  are for. ``demo_ag2`` runs it as a real AG2 chat; its script (ag2_run_events.jsonl) is the
  events such a run reports, ending ``completed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from contextadmin.models import Workflow
from contextadmin.services import workflow_import

DEMO_DIR = Path(__file__).resolve().parent
MONGO_DOCUMENTS_PATH = DEMO_DIR / "mongo_documents.json"


@dataclass(frozen=True)
class DemoWorkflow:
    name: str
    config_path: Path  # its context_variables.json
    events_path: Path  # its scripted run, one event a line (simulate_run's default for it)


GENERATOR = DemoWorkflow(
    name="Generator",
    config_path=DEMO_DIR / "context_variables.json",
    events_path=DEMO_DIR / "run_events.jsonl",
)
GENERATOR_CHAT = DemoWorkflow(
    name="GeneratorChat",
    config_path=DEMO_DIR / "ag2_context_variables.json",
    events_path=DEMO_DIR / "ag2_run_events.jsonl",
)
DEMO_WORKFLOWS: tuple[DemoWorkflow, ...] = (GENERATOR, GENERATOR_CHAT)
DEMO_WORKFLOWS_BY_NAME = {workflow.name: workflow for workflow in DEMO_WORKFLOWS}


@dataclass(frozen=True)
class DemoImport:
    name: str
    summary: str  # the import's diff summary, for the command's output


def demo_workflow_import(*, workflow: DemoWorkflow) -> DemoImport | None:
    """Import one demo workflow unless a workflow of that name exists (None then): the operator
    may have edited it, and the demo never overwrites definitions."""
    with transaction.atomic():
        if Workflow.objects.filter(name=workflow.name).exists():
            return None
        result = workflow_import(name=workflow.name, data=workflow.config_path.read_bytes())
    return DemoImport(name=workflow.name, summary=result.diff.summary())


def demo_database() -> bool:
    """Whether the database is still a demo: no workflows, or only demo workflows (say, a demo
    made before GeneratorChat shipped), so completing the demo set cannot surprise anyone."""
    present = set(Workflow.objects.values_list("name", flat=True))
    return present <= set(DEMO_WORKFLOWS_BY_NAME)


def demo_workflows_complete() -> list[DemoImport] | None:
    """Import the demo workflows a demo database lacks, for ``demo_setup``.

    Returns what was imported ([] when nothing was missing), or None when the database holds
    a workflow of the operator's own: then the demo keeps out of the way.
    """
    if not demo_database():
        return None
    imported = [demo_workflow_import(workflow=workflow) for workflow in DEMO_WORKFLOWS]
    return [done for done in imported if done is not None]
