"""Benchmarks of contextadmin against baselines measured in the same run (``python -m bench``).

Every figure is printed as one line that starts with its id (``FIGURES``), carries the machine
it ran on, and, where a baseline exists, the ratio to that baseline. See docs/benchmarks.md.
"""

FIGURES: tuple[str, ...] = (
    "B1",
    "B2.http",
    "B2.ws",
    "B3",
    "B4.B1",
    "B4.B2.http",
    "B4.B2.ws",
    "B4.B3",
    "B5",
    "B6",
    "B7",
    "B8",
    "B9",
    "B9.ag2",
    "B10",
    "B11",
    "B11.http",
    "B11.ws",
    "B11.prod",
    "B11.post",
    "B12",
    "B13.ingest",
    "B13.latency",
    "B13.outage",
)
# Selected only by their own ids: ``--only B11`` is the scale figure B11 alone, not also the
# minutes-long runs of B11 as runtimes report (bench/reporting_figures.py).
BY_NAME_ONLY: frozenset[str] = frozenset({"B11.http", "B11.ws", "B11.prod", "B11.post"})
