"""The import direction (docs/architecture.md) holds: ``lint-imports`` checks the contracts in
pyproject.toml (scripts/test runs it before pytest; here it runs under pytest alone too), and
no module imports a project module inside a function, where a cycle could hide."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = ("runs", "contextadmin", "contextadmin_sdk")
PACKAGE_DIRS = {"runs": ROOT / "runs", "contextadmin": ROOT / "contextadmin",
                "contextadmin_sdk": ROOT / "sdk" / "contextadmin_sdk"}
# Migrations import inside their functions by Django's convention, and so does
# AppConfig.ready (apps.py) for what needs the app registry; the AG2 integration is an
# optional extras ("ag2", "autogen"), imported where they are used so the rest runs without
# them, and so are the demo chats built on them.
EXEMPT_DIRS = ("migrations", "apps.py")
OPTIONAL = ("contextadmin_sdk.integrations", "runs.demo_chats")


def _function_imports(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line module`` for each import of a project module inside a function body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom):
                modules = ["." * node.level + (node.module or "")]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                if module.startswith(OPTIONAL):
                    continue
                if module.startswith(".") or module.split(".")[0] in PROJECT_PACKAGES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {module}")
    return found


def test_no_project_module_is_imported_inside_a_function():
    offenders = [
        hit
        for package in PROJECT_PACKAGES
        for path in sorted(PACKAGE_DIRS[package].rglob("*.py"))
        if not set(path.relative_to(ROOT).parts) & set(EXEMPT_DIRS)
        for hit in _function_imports(path)
    ]
    assert offenders == [], "imports inside functions (move them to the top):\n" + "\n".join(
        offenders
    )


def test_the_finder_sees_project_imports_inside_functions_only(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from runs import api\n"
        "def f():\n    from runs import selectors\n    import json\n"
        "class C:\n    async def g(self):\n        from . import views\n"
        "        import contextadmin.models\n"
    )
    hits = [hit.split()[-1] for hit in _function_imports(module, tmp_path)]
    assert hits == ["runs", ".", "contextadmin.models"]


def test_the_import_contracts_hold():
    lint_imports = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(lint_imports).exists():
        pytest.skip("import-linter is not installed (pip install -e .[test])")
    result = subprocess.run(
        [lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("folder", ["bench", "devservers", "scripts"])
def test_nothing_outside_the_tests_imports_them(folder):
    """One way: tests import bench and devservers, bench imports devservers, never back."""
    importers = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / folder).rglob("*.py"))
        if any(m == "tests" or m.startswith("tests.") for m in _imported_modules(path))
    ]
    assert importers == []
