"""B12 (bench/impact.py) at a tiny size, in the test database: it replays every run, the draft
changes them all, and the pinned version against itself changes none."""

from __future__ import annotations

import pytest

from bench import FIGURES, impact


@pytest.mark.django_db
def test_b12_replays_every_recorded_run_under_the_pinned_version_and_the_draft() -> None:
    result = impact.b12_impact(runs=3, events=24, reps=2)
    assert "B12" in FIGURES
    assert (result.runs, result.events) == (3, 24)
    assert result.unchanged_under_pinned
    assert result.changed == 3  # the draft's trigger flips at another event in every run
    assert result.rates.median > 0 and result.baseline.median > 0
    assert len(result.rates.per_rep) == len(result.baseline.per_rep) == 2
