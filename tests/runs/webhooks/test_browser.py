"""The subscription's admin page in Chromium, against real Daphne, a real ``db_worker`` and a
real receiver: the secret shown once, "send a test event", "redeliver", "rotate"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.runs.webhooks.receiver import Receiver
from tests.runs.webhooks.workers import WORKER_ENV, Worker
from tests.support.live_server import LiveServer, live_server_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def hooked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Worker]]:
    workdir = tmp_path_factory.mktemp("webhooks-browser")
    for server in live_server_run(workdir, username="operator", **WORKER_ENV):
        worker = Worker(env=server.env, log_path=workdir / "worker.log").start()
        try:
            yield server, worker
        finally:
            worker.stop()


def test_admin_buttons_send_redeliver_and_rotate(hooked_server, chromium: Any) -> None:
    from playwright.sync_api import expect

    server, _ = hooked_server
    receiver = Receiver().start()
    context = chromium.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{server.url}/admin/login/?next=/admin/webhooks/subscription/add/")
        page.fill("#id_username", server.username)
        page.fill("#id_password", server.password)
        page.click("input[type=submit]")
        page.fill("#id_url", "ftp://nowhere")
        page.check("input[name=events][value=flag_flipped]")
        page.click("input[name=_save]")
        expect(page.locator(".field-url .errorlist")).to_contain_text("must start with https://")

        page.fill("#id_url", receiver.url())
        page.click("input[name=_save]")
        secret = page.locator("#webhook-secret").inner_text().strip()
        assert secret.startswith("whsec_")
        receiver.secret = secret
        page.click("#webhook-back")
        assert secret not in page.content()  # shown once

        page.click("#webhook-test")
        expect(page.locator("ul.messagelist")).to_contain_text("Test event msg_")
        (first,) = receiver.wait(1)
        assert not first.error and first.payload["type"] == "test"
        row = page.locator(f"tr[data-message-id='{first.message_id}']")
        for _ in range(50):  # the page shows what the worker recorded
            page.reload()
            if row.get_attribute("data-status") == "delivered":
                break
            page.wait_for_timeout(100)
        expect(row.locator(".delivery-status")).to_contain_text("delivered")
        expect(row.locator("li.attempt").first).to_contain_text("HTTP 200")

        row.locator("button.redeliver").click()
        expect(page.locator("ul.messagelist")).to_contain_text("queued again")
        _, again = receiver.wait(2)
        assert again.message_id == first.message_id and not again.error

        page.click("#webhook-rotate")
        rotated = page.locator("#webhook-secret").inner_text().strip()
        assert rotated.startswith("whsec_") and rotated != secret
        receiver.secret = rotated
        page.click("#webhook-back")
        page.click("#webhook-test")
        third = receiver.wait(3)[2]
        assert not third.error and third.message_id != first.message_id  # the new secret signs
        assert errors == []
    finally:
        context.close()
        receiver.stop()
