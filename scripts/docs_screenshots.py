"""Re-take docs/inspector.png from the demo a newcomer gets, with one command:

    scripts/screenshots [--output PATH]

It does what the README tells a newcomer to do, on a throwaway database: migrate and
``demo_setup`` (as ``scripts/run`` does, with nx-27017 seeded with the demo documents), serve
it with Daphne, run ``manage.py demo_ag2`` (the GeneratorChat chat: hand-offs, a tool call,
three flags, completed), then photograph that run's page in Debian Chromium once it shows the
run completed and its hand-off readiness. Nothing outside the temporary directory is touched
but the output file.
"""

from __future__ import annotations

import argparse
import re
import secrets
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devservers.browser import CHROMIUM, CHROMIUM_ARGS
from devservers.mongo import MongoServer
from devservers.processes import PROJECT, Daphne, manage, server_env

DEFAULT_OUTPUT = PROJECT / "docs" / "inspector.png"
VIEWPORT = {"width": 1280, "height": 900}
OPERATOR = "admin"
# What a newcomer's shell does not set: environment flags would change the run's context.
UNSET_BY_A_NEWCOMER = ("CONTEXT_AWARE", "MONETIZATION_ENABLED", "ENVIRONMENT", "REDIS_URL")


@dataclass(frozen=True)
class NewcomerSite:
    url: str
    server_env: dict[str, str]
    password: str


@contextmanager
def newcomer_site(*, workdir: Path) -> Iterator[NewcomerSite]:
    """A fresh database after ``demo_setup``, served by Daphne, as after ``scripts/run``."""
    (workdir / "mongo").mkdir()
    mongo = MongoServer(workdir / "mongo").start()
    password = secrets.token_urlsafe(16)
    env = server_env(
        f"sqlite:///{workdir / 'db.sqlite3'}",
        MONGODB_URI=mongo.uri,
        DJANGO_SUPERUSER_USERNAME=OPERATOR,
        DJANGO_SUPERUSER_PASSWORD=password,
    )
    for name in UNSET_BY_A_NEWCOMER:
        env.pop(name, None)
    daphne = Daphne(env=env, log_path=workdir / "daphne.log")
    try:
        manage(env, "migrate", "--noinput")
        manage(env, "demo_setup")
        daphne.start()
        yield NewcomerSite(url=daphne.url, server_env=env, password=password)
    finally:
        daphne.stop()
        mongo.stop()


def demo_ag2_run(*, site: NewcomerSite, workdir: Path) -> str:
    """Run the README's second-terminal command against the site (with the MongoDB it started,
    as the README's command has it); return the run's id."""
    done = manage(
        site.server_env,
        "demo_ag2",
        "--url",
        site.url,
        "--delay",
        "0",
        "--token-file",
        str(workdir / "demo_ag2.token"),
    )
    found = re.search(r"/runs/([A-Za-z0-9_-]+)/", done.stdout)
    if found is None or "run_status completed" not in done.stdout:
        raise RuntimeError(f"demo_ag2 did not complete a run:\n{done.stdout}{done.stderr}")
    return found.group(1)


def run_page_screenshot(*, site: NewcomerSite, run_id: str, output: Path) -> None:
    """Log in through the admin form, open the run page and photograph it whole once it is
    connected, completed and showing its hand-offs' readiness."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(base_url=site.url, viewport=VIEWPORT)
            context.set_default_timeout(20_000)
            page = context.new_page()
            page.goto(f"/admin/login/?next=/runs/{run_id}/")
            page.fill("#id_username", OPERATOR)
            page.fill("#id_password", site.password)
            page.click("input[type=submit]")
            page.wait_for_url(f"{site.url}/runs/{run_id}/")
            # connected to a run that has ended: the pill reads "ended", not "live"
            expect(page.locator("#conn")).to_have_attribute("data-state", "ended")
            expect(page.locator("#run-status")).to_have_text("completed")
            expect(page.locator('#handoffs tr[data-status="holds"]').first).to_be_visible()
            page.wait_for_load_state("networkidle")
            # Rows below the fold skip rendering (content-visibility: auto) and a full-page
            # screenshot does not scroll: grow the viewport to the page so every part paints.
            height = page.evaluate("document.documentElement.scrollHeight")
            page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
            page.wait_for_timeout(300)  # a frame or two for the newly visible rows
            output.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(output), full_page=True)
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the PNG to write")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="contextadmin-screenshots-") as tmp:
        workdir = Path(tmp)
        with newcomer_site(workdir=workdir) as site:
            run_id = demo_ag2_run(site=site, workdir=workdir)
            run_page_screenshot(site=site, run_id=run_id, output=args.output.resolve())
    print(f"screenshots: wrote {args.output} (the run page of demo_ag2's run {run_id})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
