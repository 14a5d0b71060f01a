"""docs/deploy.md's nginx config never writes a query string (where ``?token=`` would be) to the
access log (issue 14, item 14)."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

DOC = Path(settings.BASE_DIR) / "docs" / "deploy.md"
QUERY_VARIABLES = ("$request ", "$request\"", "$request'", "$request_uri", "$args", "$query_string")


def nginx_config() -> str:
    text = DOC.read_text()
    blocks = re.findall(r"```nginx\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/deploy.md has no nginx block"
    return "\n".join(blocks)


def test_the_shipped_log_format_has_no_query_string():
    config = nginx_config()
    formats = dict(re.findall(r"log_format\s+(\w+)\s+((?:'[^']*'\s*)+);", config))
    assert "contextadmin" in formats
    logged = formats["contextadmin"]
    assert "$uri" in logged
    for variable in QUERY_VARIABLES:
        assert variable not in logged + " ", variable


def test_every_access_log_uses_the_format_without_queries():
    lines = re.findall(r"^\s*access_log\s+([^;]+);", nginx_config(), flags=re.M)
    assert lines, "the nginx config must set its access log explicitly"
    for line in lines:
        parts = line.split()
        assert parts[0] == "off" or parts[1:2] == ["contextadmin"], line
