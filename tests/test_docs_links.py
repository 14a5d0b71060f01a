"""The docs are in the repository: every relative link in README.md and docs/*.md names a file
the checkout has, and no tracked file refers to a design document the repository does not hold
(the rules are written out in docs/, and the seed documents are cited by what they say)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")


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
