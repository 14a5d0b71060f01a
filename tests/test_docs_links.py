"""The docs are in the repository: every relative link in README.md and docs/*.md names a file
the checkout has, and no tracked file refers to a design document the repository does not hold
(the rules are written out in docs/, and the seed documents are cited by what they say).
Every ``pip install`` the docs give installs what it names, from the repository root."""

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
PIP_INSTALL = re.compile(r"`(?:\S*python -m )?pip install ([^`]+)`")
INSTALL_DOCS = ["README.md", "docs/ag2.md", "docs/api.md", "docs/inspector.md"]


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [name for name in listed.split("\0") if name]


def _relative_links(path: Path) -> list[str]:
    links = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        links.append(target.split("#", 1)[0])
    return links


@pytest.mark.parametrize("doc", _markdown_files(), ids=lambda p: p.name)
def test_every_relative_link_names_a_file_in_the_repository(doc):
    missing = [t for t in _relative_links(doc) if not (doc.parent / t).exists()]
    assert missing == []


def test_the_link_check_sees_a_missing_file(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[here](here.md) [web](https://example.org/x.md) [top](#top)")
    (tmp_path / "here.md").write_text("")
    assert _relative_links(page) == ["here.md"]
    page.write_text("[gone](gone.md#part)")
    assert not (tmp_path / _relative_links(page)[0]).exists()


def test_no_tracked_file_names_a_design_document_the_repository_lacks():
    name = "DESIGN" + ".md"  # split, so this file does not name it either
    offenders = []
    for tracked in _tracked_files():
        path = ROOT / tracked
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if name in text and not (ROOT / name).exists():
            offenders.append(tracked)
    assert offenders == []


def test_no_tracked_file_cites_a_seed_by_its_file_name():
    seed_file = re.compile(r"\b00\d_[0-9a-f]{16}\.txt\b")
    offenders = [
        tracked
        for tracked in _tracked_files()
        if tracked.endswith((".py", ".md", ".js", ".html", ".toml", ".txt"))
        and (ROOT / tracked).is_file()
        and seed_file.search((ROOT / tracked).read_text(encoding="utf-8", errors="replace"))
    ]
    assert offenders == []


def _distribution(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project(directory: Path) -> dict:
    return tomllib.loads((directory / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _install_problems(command: str) -> list[str]:
    """What in ``pip install <command>``, run from the repository root, would not install: a
    path without a pyproject.toml, an extra it does not declare, a distribution of this
    repository asked of the index (it is not published there), or a path whose dependencies
    need one that is not in the same command (the server needs ./sdk)."""
    ours = {_distribution(_project(d)["name"]): d for d in (ROOT, ROOT / "sdk")}
    problems, given = [], set()
    for target in (arg for arg in shlex.split(command) if not arg.startswith("-")):
        name, _, extras = target.partition("[")
        wanted = [e for e in extras.rstrip("]").split(",") if e]
        if not name.startswith("."):
            if _distribution(name) in ours:
                problems.append(f"{target}: not on the index, install it from its path")
            continue
        if not (ROOT / name / "pyproject.toml").is_file():
            problems.append(f"{target}: {name} has no pyproject.toml")
            continue
        project = _project(ROOT / name)
        given.add(_distribution(project["name"]))
        declared = project.get("optional-dependencies", {})
        problems += [f"{target}: no extra {e!r}" for e in wanted if e not in declared]
    for distribution in given:
        for requirement in _project(ours[distribution]).get("dependencies", []):
            needed = _distribution(re.match(r"[A-Za-z0-9._-]+", requirement).group())
            if needed in ours and needed not in given:
                problems.append(f"{command}: {distribution} needs {needed} in the same command")
    return problems


@pytest.mark.parametrize("doc", INSTALL_DOCS)
def test_every_pip_install_in_the_docs_installs_what_it_names(doc):
    commands = PIP_INSTALL.findall((ROOT / doc).read_text(encoding="utf-8"))
    assert [problem for command in commands for problem in _install_problems(command)] == []


def test_the_install_check_sees_what_would_fail_from_the_root():
    assert _install_problems('"./sdk[ag2]"') == []
    assert _install_problems('-e "./sdk[mongo,ag2]" -e ".[test,ag2,autogen]"') == []
    assert _install_problems("ag2") == []  # AG2 itself, from the index
    assert _install_problems('-e ".[ag2]"')  # the server alone: contextadmin-sdk is not published
    assert _install_problems('"contextadmin-sdk[websocket]"')
    assert _install_problems('"./sdk[nope]"') == ["./sdk[nope]: no extra 'nope'"]
    assert _install_problems('"./nowhere[ag2]"')
    assert PIP_INSTALL.findall("`.venv/bin/python -m pip install -q \"./sdk[ag2]\"`") == [
        '-q "./sdk[ag2]"'
    ]
