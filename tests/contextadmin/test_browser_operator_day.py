"""The operator's day (round 3) in real Chromium against real Daphne: the workflow page of a
staff user who may only view offers nothing to edit."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.contextadmin.conftest import EXAMPLE_PATH
from tests.contextadmin.test_browser_versions import session
from tests.support.live_server import LiveServer

pytestmark = pytest.mark.browser

VIEWER = (
    "from django.contrib.auth import get_user_model; "
    "from django.contrib.auth.models import Permission; "
    "user = get_user_model().objects.create_user({name!r}, password={password!r}, is_staff=True); "
    "user.user_permissions.add(Permission.objects.get(codename='view_workflow'))"
)


def test_a_view_only_page_has_no_move_buttons_nor_import(
    daphne_server: LiveServer, chromium: Any
) -> None:
    """The keyboard's ↑ ↓ buttons moved rows of a page that cannot be saved, beside each row's
    order field printed as a dict."""
    daphne_server.manage("import_context", str(EXAMPLE_PATH), "--workflow", "ViewOnlyFlow")
    password = secrets.token_urlsafe(12)
    daphne_server.manage("shell", "-c", VIEWER.format(name="viewer", password=password))
    page = session(chromium, daphne_server, "viewer", password)
    try:
        page.get_by_role("link", name="ViewOnlyFlow", exact=True).click()
        expect(page.locator("#content h1")).to_have_text("View workflow")
        expect(page.locator("#content")).to_contain_text("interview_complete")
        expect(page.locator(".reorder-buttons")).to_have_count(0)
        expect(page.locator("#content")).not_to_contain_text("is_hidden")
        expect(page.get_by_role("link", name="Import…")).to_have_count(0)
        assert page.page_errors == []
    finally:
        page.context.close()
