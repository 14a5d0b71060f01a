"""Replay a workflow's recorded runs under a version (the draft by default) and report changes.

Exit status: 0 when no run would change, 3 when some would (a pipeline gates on it), 1 on error.
"""

import math
from typing import Any

from contextadmin_sdk.engine import format as fmt
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextadmin import impact
from contextadmin.selectors import (
    VersionNotFound,
    version_parse,
    workflow_export_version,
    workflow_get,
)

CHANGED_EXIT = 3
MAX_RUNS = 1_000_000  # past 2**63 the database refuses the LIMIT (a traceback)


class Command(BaseCommand):
    help = (
        "Replay the last N recorded runs of a workflow under a version (default: the draft) "
        "instead of their pinned versions; list each run whose flags or hand-offs would change."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> Any:
        # --version means the definitions' version here, not Django's.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workflow", help="workflow name")
        parser.add_argument("--version", default="draft", metavar="N|draft|published")
        parser.add_argument("--runs", type=int, default=impact.DEFAULT_RUNS, metavar="N")
        parser.add_argument(
            "--time-budget", type=float, default=impact.DEFAULT_TIME_BUDGET_S, metavar="SECONDS"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["runs"] <= MAX_RUNS:
            raise CommandError(f"--runs: from 1 to {MAX_RUNS:,}, got {options['runs']}")
        if not (math.isfinite(options["time_budget"]) and options["time_budget"] > 0):
            # nan and inf would bound nothing
            raise CommandError(
                f"--time-budget: a positive number of seconds, got {options['time_budget']}"
            )
        workflow = workflow_get(name=options["workflow"])
        if workflow is None:
            raise CommandError(f"no workflow named {options['workflow']!r}")
        try:
            exported = workflow_export_version(
                workflow=workflow, version=version_parse(options["version"])
            )
            candidate = fmt.parse_config(exported.body).config
        except VersionNotFound as exc:
            raise CommandError(str(exc)) from None
        except fmt.ConfigError as exc:
            raise CommandError(f"version {options['version']} breaks the format: {exc}") from None
        source = impact.run_source()
        if source is None:
            raise CommandError(
                "no recorded runs to replay: the app that records runs registers a source "
                "with contextadmin.impact.run_source_register"
            )

        def progress(done: int, limit: int) -> None:
            if done % 10 == 0:
                self.stderr.write(f"replayed {done} of at most {limit} runs")

        report = impact.impact_replay(
            runs=source(workflow_name=workflow.name, limit=options["runs"]),
            candidate=candidate,
            limit=options["runs"],
            time_budget_s=options["time_budget"],
            progress=progress,
        )
        label = f"version {exported.number}" if exported.number else "the current definitions"
        for run in report.changed:
            pinned = f" (pinned version {run.version})" if run.version else ""
            self.stdout.write(f"run {run.run_id}{pinned}:")
            for difference in run.differences:
                self.stdout.write(f"  {difference}")
        self.stdout.write(
            f"{report.replayed} runs replayed under {label} in {report.seconds:.2f} s "
            f"({report.runs_per_second:.0f} runs/s, {report.events} events): "
            f"{len(report.changed)} would change"
            + (f"; stopped early: {report.stopped_early}" if report.stopped_early else "")
        )
        if report.changed:
            raise CommandError(
                f"{len(report.changed)} of {report.replayed} runs would change",
                returncode=CHANGED_EXIT,
            )
