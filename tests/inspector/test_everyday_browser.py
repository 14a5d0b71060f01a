"""Issue 17 in a real browser (Debian Chromium, Playwright, real Daphne): the front page, the
runs list's pages and search over 1,000 runs, the export download and its import, the run
page's state in the URL across a reload, the stale marker, crash-ended runs, dark mode."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from playwright.sync_api import expect

from devservers.processes import manage
from tests.inspector.conftest import wait_until
from tests.inspector.test_browser import context_value, open_run, stream_seqs, travel
from tests.support.demo import demo_events

pytestmark = pytest.mark.browser


def shell(live, code: str) -> str:
    result = manage(live.env, "shell", "-c", code, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def thousand_runs(live) -> str:
    """1,000 ended runs of one enterprise, one a minute apart (inserted directly)."""
    tag = f"bulk{uuid.uuid4().hex[:6]}"
    shell(live, f"""
import datetime as dt
from django.utils import timezone
from runs.models import Run
base = timezone.now() - dt.timedelta(days=3)
runs = [
    Run(id=f"{tag}-{{i:04d}}", workflow_name="Generator", definitions={{}},
        definitions_hash="x", enterprise_id="{tag}" if i % 2 else "{tag}-odd",
        status="completed", state={{"flips": []}})
    for i in range(1000)
]
Run.objects.bulk_create(runs)
for i, run in enumerate(runs):
    run.started_at = base + dt.timedelta(minutes=i)
    run.ended_at = run.started_at + dt.timedelta(seconds=30)
Run.objects.bulk_update(runs, ["started_at", "ended_at"], batch_size=500)
""")
    return tag


# -- the front page ------------------------------------------------------------------------------
def test_front_page_shows_workflows_and_a_run_going_live(page, live, anonymous_page):
    anonymous_page.goto("/")
    assert "/admin/login/" in anonymous_page.url
    # The newest change of the shared server (other tests add theirs): a workflow of its own.
    newest = f"Fresh{uuid.uuid4().hex[:6]}"
    shell(live, f"""
from contextadmin.services import workflow_import
from tests.support.demo import demo_config
workflow_import(name={newest!r}, data=demo_config())
""")
    page.goto("/")
    expect(page.locator("h1")).to_have_text("contextadmin")
    row = page.locator('#workflows tr[data-workflow="Generator"]')
    expect(row).to_be_visible()
    expect(row.locator('a[data-link="preview"]')).to_have_attribute(
        "href", "/workflows/Generator/preview/")
    runs_link = row.locator('a[data-link="runs"]')
    expect(runs_link).to_have_attribute("href", "/runs/?workflow=Generator")
    expect(page.locator("#changes")).to_contain_text(newest)
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    reporter = live.reporter(enterprise_id="front-page")
    live_row = page.locator(f'#live-runs li[data-run-id="{reporter.run_id}"]')
    expect(live_row).to_contain_text("front-page")
    reporter.event("run_status", status="completed")
    expect(live_row).to_have_count(0)
    page.click('a[data-link="edit"] >> nth=0')
    expect(page).to_have_url(re.compile(r"/admin/contextadmin/workflow/\d+/change/"))


# -- the runs list -------------------------------------------------------------------------------
def test_runs_list_pages_and_searches_1000_runs(page, live, thousand_runs):
    tag = thousand_runs
    page.goto(f"/runs/?enterprise_id={tag}")
    rows = page.locator("#run-rows > tr")
    expect(rows).to_have_count(50)
    first_page = page.eval_on_selector_all("#run-rows > tr", "r => r.map(x => x.dataset.runId)")
    assert first_page[0] == f"{tag}-0999" and first_page[-1] == f"{tag}-0901"
    seen = list(first_page)
    for _ in range(9):  # 500 runs of this enterprise: ten pages of 50
        page.click("#page-older")
        expect(rows).to_have_count(50)
        seen += page.eval_on_selector_all("#run-rows > tr", "r => r.map(x => x.dataset.runId)")
    expect(page.locator("#page-older")).to_have_count(0)
    assert seen == [f"{tag}-{i:04d}" for i in range(999, 0, -2)]
    page.click("#page-newer")  # one page back towards the newest
    expect(rows).to_have_count(50)
    expect(rows.first).to_have_attribute("data-run-id", f"{tag}-0199")
    page.click("#page-newest")
    expect(rows.first).to_have_attribute("data-run-id", f"{tag}-0999")

    page.fill('input[name="q"]', f"{tag}-012")
    page.click("#filters button[type=submit]")
    expect(rows).to_have_count(5)  # 0120-0129, the odd ones are this enterprise's
    expect(page.locator('input[name="q"]')).to_have_value(f"{tag}-012")
    page.goto(f"/runs/?enterprise_id={tag}&since=2000-01-01T00:00&until=2000-01-02T00:00")
    expect(page.locator("#runs-empty")).to_be_visible()
    page.goto("/runs/?since=yesterday")
    expect(page.locator("#search-error")).to_contain_text("since:")


def test_runs_list_stays_live_with_a_search(page, live):
    enterprise = f"live-{uuid.uuid4().hex[:6]}"
    page.goto(f"/runs/?enterprise_id={enterprise}&status=running")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("#runs-empty")).to_be_visible()
    other = live.reporter(enterprise_id="someone-else")
    reporter = live.reporter(enterprise_id=enterprise)
    row = page.locator(f'#run-rows tr[data-run-id="{reporter.run_id}"]')
    expect(row).to_be_visible()
    expect(page.locator(f'#run-rows tr[data-run-id="{other.run_id}"]')).to_have_count(0)
    reporter.event("agent_text", agent="InterviewAgent", text="hi")
    expect(row.locator(".event-count")).to_have_text("1")
    reporter.event("run_status", status="failed")
    expect(row).to_have_count(0)  # no longer running: the search drops it


# -- export and import ---------------------------------------------------------------------------
def test_download_the_events_and_import_them_as_the_same_run(page, live, tmp_path):
    reporter = live.reporter()
    for event in [*demo_events(), {"type": "run_status", "status": "completed"}]:
        reporter.event(**event)
    open_run(page, reporter.run_id)
    with page.expect_download() as info:
        page.click("#download")
    download = info.value
    assert download.suggested_filename == f"run-{reporter.run_id}.jsonl"
    path = tmp_path / "run.jsonl"
    download.save_as(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["run"]["id"] == reporter.run_id
    assert [e["seq"] for e in lines[1:]] == list(range(1, len(demo_events()) + 2))

    copy_id = f"copy-{uuid.uuid4().hex[:8]}"
    result = manage(live.env, "import_run", str(path), "--run-id", copy_id, check=False)
    assert result.returncode == 0, result.stderr
    assert copy_id in result.stdout
    states = shell(live, f"""
import json
from runs.state import run_state_at
from runs.models import Run
out = []
for pk in ({reporter.run_id!r}, {copy_id!r}):
    run = Run.objects.get(pk=pk)
    out.append([run.state, run_state_at(run=run, seq=4).state, run.status])
print(json.dumps(out))
""")
    original, copy = json.loads(states.strip().splitlines()[-1])
    assert original == copy
    open_run(page, copy_id)
    expect(context_value(page, "interview_complete")).to_have_text("true")
    expect(page.locator("#run-status")).to_have_text("completed")


# -- shareable state ------------------------------------------------------------------------------
def test_the_run_page_view_survives_a_reload(page, live):
    reporter = live.reporter()
    for event in demo_events():
        reporter.event(**event)
    open_run(page, reporter.run_id)
    page.select_option("#filter-type", "agent_text")
    travel(page, 3)
    expect(page.locator("#context-at")).to_have_text("after #3")
    page.fill("#compare-a", "2")
    page.click("#compare button[type=submit]")
    expect(page.locator("#compare-result")).to_contain_text("From #2 to #8")
    page.locator("#event-5 .ev-seq").click()
    expect(page.locator("#event-5")).to_have_class("ev ev-agent_text target")
    wait_until(lambda: "event=5" in page.url, message="the URL to name the event")
    url = page.url
    assert "at=3" in url and "type=agent_text" in url and "compare=2-live" in url, url

    page.reload()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("#context-at")).to_have_text("after #3")
    # the slider says what the panels show (it sat at the live end, its output "#8")
    expect(page.locator("#travel-seq")).to_have_value("3")
    expect(page.locator("#travel-out")).to_have_text("#3")
    expect(page.locator("#travel-note")).to_contain_text("after event #3 of 8")
    expect(context_value(page, "interview_complete")).to_have_text("false")
    expect(page.locator("#filter-type")).to_have_value("agent_text")
    expect(page.locator("#event-5")).to_have_class("ev ev-agent_text target")
    expect(page.locator("#compare-result")).to_contain_text("From #2 to #8")

    # "compare with #" follows the live end; the travel note counts the run's events, and its
    # button keeps a keyboard reader's focus while it does
    back = page.locator("#travel-note").get_by_role("button", name="Back to live")
    back.focus()
    reporter.event("agent_text", agent="InterviewAgent", text="one more")
    expect(page.locator("#compare-b")).to_have_value("9")
    expect(page.locator("#travel-note")).to_contain_text("after event #3 of 9")
    expect(page.locator("#travel-seq")).to_have_value("3")
    expect(back).to_be_focused()
    # a filter that matches nothing says so
    page.select_option("#filter-type", "handoff")
    expect(page.locator("#stream-nomatch")).to_contain_text("No event matches type handoff")
    page.get_by_role("button", name="Clear filters").click()
    expect(page.locator("#stream-nomatch")).to_be_hidden()
    assert stream_seqs(page)[-1] == 9


def test_a_link_to_an_event_shows_that_event_in_the_window(page, live):
    """``?event=N`` marked the event but left it below the fold: the panels above the list
    drew after the list had scrolled to it."""
    reporter = live.reporter()
    for event in demo_events():
        reporter.event(**event)
    page.set_viewport_size({"width": 1300, "height": 700})
    page.goto(f"/runs/{reporter.run_id}/?event=7")
    row = page.locator("#event-7")
    expect(row).to_have_class(re.compile(r"\btarget\b"))
    expect(page.locator("#graph g.node.current")).to_be_visible()  # the panels have drawn
    expect(row).to_be_in_viewport()


# -- lifecycle -----------------------------------------------------------------------------------
def test_a_silent_run_is_stale_and_a_crash_is_not_a_completion(page, live):
    reporter = live.reporter(enterprise_id="stale")
    shell(live, f"""
import datetime as dt
from django.utils import timezone
from runs.models import Run
two_hours_ago = timezone.now() - dt.timedelta(hours=2)
Run.objects.filter(pk={reporter.run_id!r}).update(started_at=two_hours_ago)
""")
    page.goto(f"/runs/?q={reporter.run_id}")
    pill = page.locator(f'#run-rows tr[data-run-id="{reporter.run_id}"] td.status .pill')
    expect(pill).to_have_text("stale")
    expect(pill).to_have_attribute("data-status", "stale")
    open_run(page, reporter.run_id)
    expect(page.locator("#run-status")).to_have_text("stale")
    expect(page.locator("#run-duration")).to_contain_text("h")
    reporter.event("agent_text", agent="InterviewAgent", text="back")  # an event: no longer stale
    expect(page.locator("#run-status")).to_have_text("running")
    expect(page.locator("#run-last-event")).not_to_have_text("—")
    reporter.event("run_status", status="failed")
    expect(page.locator("#run-status")).to_have_text("crashed (failed)")
    expect(page.locator("#run-status")).to_have_attribute("data-status", "crash")
    expect(page.locator("#run-ended")).not_to_have_text("not yet")


def test_a_run_that_reports_as_it_joins_a_filtered_list_is_running_not_stale(page, live):
    """The socket's summaries had no last event time: a row new to the page (here, once its
    flag flips) read as silent since its start two hours ago: stale."""
    reporter = live.reporter(enterprise_id="joins")
    shell(live, f"""
import datetime as dt
from django.utils import timezone
from runs.models import Run
Run.objects.filter(pk={reporter.run_id!r}).update(
    started_at=timezone.now() - dt.timedelta(hours=2))
""")
    page.goto("/runs/?flag=interview_complete&enterprise_id=joins")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    for event in demo_events()[:5]:  # the fifth flips interview_complete: the last it hears
        reporter.event(**event)
    row = page.locator(f'#run-rows tr[data-run-id="{reporter.run_id}"]')
    expect(row).to_be_visible()
    expect(row.locator("td.status .pill")).to_have_text("running")


def test_the_front_page_says_how_many_live_runs_it_leaves_out(page, live):
    """It showed the newest 20 live runs without a word about the others (the oldest ones,
    the likeliest to be stale), and wrote "1 events"."""
    reporter = live.reporter(enterprise_id="one-event", run_id="a-run-id-longer-than-twelve")
    reporter.event("agent_text", agent="InterviewAgent", text="hello")
    shell(live, """
import datetime as dt
from django.utils import timezone
from runs.models import Run
from runs.services.lifecycle import run_start
for index in range(21):
    run = run_start(workflow_name="Generator", enterprise_id=f"old-{index}").run
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - dt.timedelta(days=1))
""")
    page.goto("/")
    expect(page.locator("#live-runs > li")).to_have_count(20)
    more = page.locator("#live-more")
    expect(more).to_be_visible()
    hidden = int(re.search(r"and (\d+) older live run", more.inner_text()).group(1))
    total = int(shell(live, """
from runs.selectors import runs_live_count
print(runs_live_count())
""").strip().splitlines()[-1])
    assert hidden == total - 20 >= 2
    row = page.locator('#live-runs li[data-run-id="a-run-id-longer-than-twelve"]')
    expect(row).to_contain_text("1 event ·")
    expect(row.locator("code")).to_have_text("a-run-id-lon…")
    expect(row.locator("a")).to_have_attribute("title", "a-run-id-longer-than-twelve")
    live.reporter(enterprise_id="newest").event("agent_text", agent="InterviewAgent", text="hi")
    expect(page.locator("#live-runs > li")).to_have_count(20)  # the newest 20, live
    expect(more).to_contain_text(f"and {hidden + 1} older live runs")


def test_the_front_pages_last_run_follows_the_newest_run_live(page, live):
    """"Last run" kept the run the page was loaded with while *live now* moved on."""
    page.goto("/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    reporter = live.reporter(enterprise_id="last-run")
    cell = page.locator('#workflows tr[data-workflow="Generator"] td.last-run')
    expect(cell).to_have_attribute("data-run-id", reporter.run_id)
    expect(cell.locator(".pill")).to_have_text("running")
    reporter.event("run_status", status="completed")
    expect(cell.locator(".pill")).to_have_text("completed")
    expect(cell.locator("a")).to_have_attribute("href", f"/runs/{reporter.run_id}/")


# -- dark mode ---------------------------------------------------------------------------------
DARK_BG, LIGHT_BG = "rgb(18, 21, 28)", "rgb(246, 247, 249)"  # the palette's --bg: #12151c, #f6f7f9


def bg_variable(page) -> str:
    """The page's background as it is drawn now (the palette's --bg, light or dark side)."""
    return page.evaluate("getComputedStyle(document.documentElement).backgroundColor")


def test_dark_mode_follows_the_system_and_the_admins_theme(page, live):
    page.emulate_media(color_scheme="dark")
    page.goto("/")
    assert bg_variable(page) == DARK_BG
    page.emulate_media(color_scheme="light")
    page.evaluate("localStorage.setItem('theme', 'dark')")  # the admin's theme toggle
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert bg_variable(page) == DARK_BG
    page.emulate_media(color_scheme="dark")
    page.evaluate("localStorage.setItem('theme', 'light')")
    page.reload()
    assert bg_variable(page) == LIGHT_BG
    page.evaluate("localStorage.removeItem('theme')")
    page.screenshot(path=str(live.workdir / "front-dark.png"))


def test_screenshots_of_the_front_page_and_the_runs_list(page, live):
    from tests.inspector.conftest import OUTPUT

    OUTPUT.mkdir(exist_ok=True)
    reporter = live.reporter(enterprise_id="screenshot")
    for event in demo_events()[:4]:
        reporter.event(**event)
    page.goto("/")
    expect(page.locator(f'#live-runs li[data-run-id="{reporter.run_id}"]')).to_be_visible()
    page.screenshot(path=str(OUTPUT / "front-page.png"), full_page=True)
    page.goto("/runs/")
    expect(page.locator("#run-rows > tr").first).to_be_visible()
    page.screenshot(path=str(OUTPUT / "runs-list.png"))
    open_run(page, reporter.run_id)
    page.locator(".page-head").screenshot(path=str(OUTPUT / "run-head.png"))
    page.locator(".run-meta").screenshot(path=str(OUTPUT / "run-meta.png"))


def test_the_demo_a_newcomer_gets_completes_and_makes_the_docs_screenshots(page, live):
    """README's second terminal: demo_ag2 runs the GeneratorChat demo (hand-offs, a tool call,
    three flags) and ends completed. The screenshots land in test-output/; docs/inspector.png
    comes from scripts/screenshots, on a database holding only what demo_setup gives a newcomer
    (this server also holds the tests' Routed workflow)."""
    from tests.inspector.conftest import OUTPUT

    page.goto("/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    demo = manage(live.env, "demo_ag2", "--url", live.url,
                  "--token-file", str(live.workdir / "demo.token"))
    run_id = re.search(r"/runs/([A-Za-z0-9_-]+)/", demo.stdout + demo.stderr).group(1)
    page.goto("/")
    expect(page.locator('#workflows tr[data-workflow="GeneratorChat"] .last-run')).to_contain_text(
        "completed")
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "front-page-demo.png"), full_page=True)
    open_run(page, run_id)
    expect(page.locator("#run-status")).to_have_text("completed")
    expect(page.locator("#graph g.edge.taken").first).to_be_visible()
    page.screenshot(path=str(OUTPUT / "run-page-demo.png"), full_page=True)
