"""One owner per rule: a second copy of a rule the server keeps in one module fails here.

Each row names the rule, the one module allowed to state it, and what a copy looks like in
source (the server's Python; the SDK folders have their own owners)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = ("migrations", "engine", "integrations")


def _server_sources() -> list[Path]:
    return [
        path
        for package in ("contextadmin", "runs")
        for path in sorted((ROOT / package).rglob("*.py"))
        if not set(path.relative_to(ROOT).parts) & set(SKIPPED)
        and not path.name.startswith("client")
    ]


RULES = [
    # who may call: the staff check
    ("staff access", "runs/auth.py", re.compile(r"\.is_staff\b")),
    # the JSON error shape: {"error": ...} bodies
    (
        "JSON error body",
        "contextadmin/errors.py",
        re.compile(r"""\{\s*["']error["']\s*:|JsonResponse\("""),
    ),
    # the server's env-var names: django-environ only through ServerEnv (SERVER_ENV_VARS)
    ("settings read", "contextadmin/settings.py", re.compile(r"\benviron\.Env\b")),
]


@pytest.mark.parametrize(("rule", "owner", "copy"), RULES, ids=[r[0] for r in RULES])
def test_each_rule_is_stated_by_its_owner_only(rule, owner, copy):
    stated_in = {
        str(path.relative_to(ROOT))
        for path in _server_sources()
        if copy.search(path.read_text(encoding="utf-8"))
    }
    assert stated_in <= {owner}, f"{rule}: keep it in {owner}"
    assert owner in stated_in, f"{rule}: the check no longer sees its owner"
