"""Shared fixtures. Area fixtures live in tests/support/ and are registered here."""

from pathlib import Path

(Path(__file__).resolve().parents[1] / "var").mkdir(exist_ok=True)  # the file test database

pytest_plugins: list[str] = [
    "tests.support.mongo",
    "tests.support.live_server",
    "tests.support.browser",
]
