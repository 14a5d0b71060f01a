"""``python -m bench`` on a machine without the AG2 extras: B9 is skipped with a line naming the
extra to install, and the other figures still run and are written (issue 22 item 13).

The extras stay installed in the shared virtualenv: the child process blocks their imports
itself (``sys.modules[name] = None`` makes ``import name`` raise ImportError, as on a machine
where they were never installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
WITHOUT_EXTRAS = """
import sys
sys.modules["autogen"] = None  # AG2 Classic: the "autogen" extra
sys.modules["ag2"] = None  # AG2 1.x: the "ag2" extra
from bench.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_bench_without_the_ag2_extras_skips_b9_naming_the_extra_and_writes_the_rest(tmp_path):
    output = tmp_path / "benchmarks.md"
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, "--quick", "--only", "B7,B9", "--output",
         str(output)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    (b9,) = [line for line in lines if line.startswith("B9  ")]
    assert "skipped: AG2 Classic is not installed here" in b9
    assert 'pip install "./sdk[autogen]"' in b9
    (b7,) = [line for line in lines if line.startswith("B7  ")]
    assert "MET" in b7 or "MISSED" in b7  # measured as usual
    table = output.read_text()
    row = next(line for line in table.splitlines() if line.startswith("| B7 |"))  # this run's
    assert "**met**" in row or "**missed**" in row
    assert '| B9 | ' in table and 'pip install "./sdk[autogen]"' in table


def test_the_extras_are_named_as_pyproject_declares_them():
    from bench.__main__ import EXTRAS

    pyproject = (PROJECT / "sdk" / "pyproject.toml").read_text()  # the SDK's extras
    for module, (_, install) in EXTRAS.items():
        extra = install.split('"./sdk[')[1].split("]")[0]
        assert extra == module and f"\n{extra} = [" in pyproject, (module, install)
