"""Shared fixtures. Area fixtures live in tests/support/ and are registered here."""

pytest_plugins: list[str] = []
