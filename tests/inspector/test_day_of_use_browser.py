"""A day of watching live runs, in a real browser (Debian Chromium, Playwright, real Daphne):
what an engineer met and the pages got wrong. Lists that never heard of a run ending (a
runs-list message lost on the way), a pager that skipped runs after a re-read, a time-travel
slider that the live stream kept pulling back, values and texts that made a row tens of
thousands of pixels tall, long enterprise ids wider than a phone, and "Failed to fetch"."""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
import uuid

import pytest
from playwright.sync_api import expect

from devservers.processes import manage
from tests.inspector.test_browser import open_run, stream_seqs
from tests.support.busy import Held
from tests.support.demo import demo_events

pytestmark = pytest.mark.browser


def shell(live, code: str) -> None:
    result = manage(live.env, "shell", "-c", code, check=False)
    assert result.returncode == 0, result.stderr[-2000:]


def lose_messages(page) -> None:
    """From now on the page's socket stays open but its messages are lost on the way, as a
    Redis restart or a failed broadcast loses them: nothing will ever send them again."""
    page.evaluate("inspector.socket.onMessage = () => {}")


# -- the lists: a lost runs-list message ---------------------------------------------------------
@pytest.mark.parametrize(
    ("where", "rows"), [("/", "#live-runs li"), ("/runs/?enterprise_id={tag}", "#run-rows tr")]
)
def test_a_run_that_ended_unheard_leaves_the_live_lists_within_30_s(page, live, where, rows):
    tag = f"lost{uuid.uuid4().hex[:6]}"
    reporter = live.reporter(enterprise_id=tag)
    reporter.event(**demo_events()[0])
    page.clock.install()
    page.goto(where.format(tag=tag))
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    row = page.locator(f'{rows}[data-run-id="{reporter.run_id}"]')
    expect(row).to_contain_text("running")
    lose_messages(page)
    reporter.event("run_status", status="completed")
    page.clock.run_for(2_000)
    expect(row).to_contain_text("running")  # unheard: the page cannot know yet
    page.clock.fast_forward(31_000)  # the page re-reads its rows every 30 s
    if where == "/":
        expect(row).to_have_count(0)  # no longer "live now"
    else:
        expect(row.locator("td.status")).to_have_text("completed")


def test_the_front_page_re_reads_its_live_runs_after_a_reconnect(page, live):
    reporter = live.reporter(enterprise_id="home-reconnect")
    reporter.event(**demo_events()[0])
    page.goto("/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    row = page.locator(f'#live-runs li[data-run-id="{reporter.run_id}"]')
    expect(row).to_be_visible()
    # the socket drops and stays away a few seconds; the run ends meanwhile
    page.evaluate("inspector.socket.minDelay = 4000; inspector.socket.drop()")
    expect(page.locator("#conn")).to_have_attribute("data-state", "offline")
    reporter.event("run_status", status="completed")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live", timeout=10_000)
    expect(row).to_have_count(0)


def test_the_newest_runs_page_re_read_links_older_runs_without_skipping_any(page, live):
    tag = f"pager{uuid.uuid4().hex[:6]}"
    shell(live, f"""
import datetime as dt
from django.utils import timezone
from runs.models import Run
base = timezone.now() - dt.timedelta(days=1)
runs = [Run(id=f"{tag}-{{i:03d}}", workflow_name="Generator", definitions={{}},
            definitions_hash="x", enterprise_id="{tag}", status="completed",
            state={{"flips": []}}) for i in range(55)]
Run.objects.bulk_create(runs)
for i, run in enumerate(runs):
    run.started_at = base + dt.timedelta(minutes=i)
Run.objects.bulk_update(runs, ["started_at"])
""")
    page.goto(f"/runs/?enterprise_id={tag}")
    expect(page.locator("#run-rows > tr")).to_have_count(50)
    started = []
    for _ in range(5):  # five new runs join the newest page live
        reporter = live.reporter(enterprise_id=tag)
        started.append(reporter.run_id)
    expect(page.locator("#run-rows > tr")).to_have_count(55)
    # a reconnect re-reads the newest page: the 50 newest runs
    page.evaluate("inspector.socket.drop()")
    expect(page.locator("#run-rows > tr")).to_have_count(50)
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    seen = page.eval_on_selector_all("#run-rows > tr", "rows => rows.map(r => r.dataset.runId)")
    page.click("#page-older")
    expect(page.locator("#run-rows > tr")).to_have_count(10)
    seen += page.eval_on_selector_all("#run-rows > tr", "rows => rows.map(r => r.dataset.runId)")
    assert sorted(seen) == sorted([f"{tag}-{i:03d}" for i in range(55)] + started)


# -- time travel while the run streams -----------------------------------------------------------
class Stream:
    """Events into a run, a few every 20 ms, until stopped."""

    def __init__(self, reporter) -> None:
        self.reporter = reporter
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        count = 0
        while not self.stop.is_set():
            count += 1
            self.reporter.event("agent_text", agent="user", text=f"msg {count}")
            time.sleep(0.02)

    def __enter__(self) -> Stream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def test_the_slider_keys_step_back_while_events_keep_arriving(page, live):
    reporter = live.reporter(enterprise_id="slider-keys")
    for _ in range(100):
        reporter.event("agent_text", agent="user", text="before")
    open_run(page, reporter.run_id)
    with Stream(reporter):
        page.wait_for_function("inspector.model.lastSeq > 120")
        page.focus("#travel-seq")
        page.keyboard.press("ArrowLeft")  # off the live end: the state after one event
        page.wait_for_function("!inspector.view().live && inspector.view().seq !== null")
        first = page.evaluate("inspector.view().seq")
        # A key held down, the stream's renders in between; a pause long enough for a state
        # to be asked for, which comes back while the keys go on: it used to put the slider
        # back where it was asked (keys lost, one under load in CI, four here).
        holding = [True]  # the one request asked for in the pause; later ones pass
        states = Held(page, lambda request: holding[0] and "/state/" in request.url)
        for press in range(15):
            page.keyboard.press("ArrowLeft")
            page.wait_for_timeout(40)
            if press == 6:
                page.wait_for_timeout(300)  # the debounced state request leaves: held
                states.arrived(page)
            if press == 10:
                holding[0] = False
                states.release(page)  # its answer lands between the next keys
        expect(page).to_have_url(re.compile(rf"[?&]at={first - 15}(&|$)"))
        page.wait_for_function(f"inspector.view().seq === {first - 15}")
        expect(page.locator("#travel-out")).to_have_text(f"#{first - 15}")
        page.keyboard.press("End")  # the right end is the live end, however far it moved
        expect(page.locator("#travel-live")).to_have_attribute("aria-pressed", "true")
        assert page.evaluate("inspector.view().live") is True


def test_the_template_preview_follows_a_streaming_run_once_a_second_and_rests_when_it_rests(
        page, live):
    reporter = live.reporter(enterprise_id="preview-follow")
    reporter.event("agent_text", agent="user", text="first")
    open_run(page, reporter.run_id)
    asked: list[str] = []
    page.on("request", lambda request: "/resolve" in request.url and asked.append(request.url))
    page.fill("#template-input", "{{no_such_variable}} and {{enterprise_id}}")
    expect(page.locator("#template-at")).to_contain_text("after #1 ")
    asked.clear()
    with Stream(reporter):
        page.wait_for_timeout(4000)
    # about one a second while it streams (the page redraws 4 times a second), not one a redraw
    assert 2 <= len(asked) <= 5, asked
    last = reporter.next_seq - 1
    reporter.flush()
    expect(page.locator("#template-at")).to_contain_text(f"after #{last} ")  # it caught up
    asked.clear()
    page.wait_for_timeout(2500)  # nothing moved: nothing asked again
    assert asked == []


# -- huge values ---------------------------------------------------------------------------------
def test_a_huge_text_or_value_shows_its_start_and_the_rest_on_demand(page, live):
    reporter = live.reporter(
        "GeneratorChat", enterprise_id="huge", context={"concept_overview": "C" * 50_000})
    reporter.event("agent_text", agent="InterviewAgent", text="word " * 19_000)
    reporter.event("tool_response", agent="ContextVariablesAgent", tool="save_context_plan",
                   status="success", data={f"key{i}": "v" * 40 for i in range(3000)})
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(2)
    for seq in (1, 2):
        assert page.locator(f"#event-{seq}").bounding_box()["height"] < 600
    cell = page.locator('#context tr[data-name="concept_overview"] td.value')
    assert cell.bounding_box()["height"] < 400
    expect(cell.locator("button.clip-toggle")).to_have_text("show all 50,000 characters")
    text = page.locator("#event-1 .ev-text")
    toggle = text.locator("button.clip-toggle")
    expect(toggle).to_have_text("show all 95,000 characters")
    toggle.click()
    assert len(text.locator(".clipped").inner_text()) >= 94_000  # all of it, as text
    expect(toggle).to_have_text("show less")
    toggle.click()
    assert page.locator("#event-1").bounding_box()["height"] < 600
    page.fill("#template-input", "{{concept_overview}}")  # resolved: 50,000 characters
    expect(page.locator("#template-at")).to_contain_text("resolved against the state after #2")
    assert page.locator("#template-output").bounding_box()["height"] < 400
    cell.locator("button.clip-toggle").click()  # opened: it stays open across redraws
    reporter.event("agent_text", agent="InterviewAgent", text="NEXT")  # a flip: the table redraws
    flag = page.locator('#context tr[data-name="interview_complete"] td.value')
    expect(flag).to_have_text("true")
    expect(cell.locator("button.clip-toggle")).to_have_text("show less")


# -- narrow screens, an unreachable server -------------------------------------------------------
def test_a_long_enterprise_id_fits_a_400_px_screen(chromium, live, staff_state):
    enterprise = "enterprise-" + "x" * 150
    reporter = live.reporter(enterprise_id=enterprise)
    reporter.event(**demo_events()[0])
    context = chromium.new_context(base_url=live.url, storage_state=staff_state,
                                   viewport={"width": 400, "height": 900})
    try:
        page = context.new_page()
        for path in (f"/runs/{reporter.run_id}/", "/"):
            page.goto(path)
            expect(page.get_by_text(enterprise).first).to_be_visible()
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 400, f"{path} is {width} px wide at 400 px"
    finally:
        context.close()


def test_a_server_out_of_reach_is_said_in_words(page, live):
    reporter = live.reporter(enterprise_id="unreachable")
    for event in demo_events()[:4]:
        reporter.event(**event)
    open_run(page, reporter.run_id)
    page.route("**/api/runs/**", lambda route: route.abort("connectionrefused"))
    page.evaluate("inspector.travelTo(2)")
    expect(page.locator("#travel-note")).to_have_text(
        "Could not load #2: the server could not be reached; try again in a moment")
    assert stream_seqs(page) == [1, 2, 3, 4]


def test_a_filter_matching_nothing_in_a_capped_list_says_earlier_events_may_match(page, live):
    reporter = live.reporter("GeneratorChat", enterprise_id="capped-filter")
    reporter.event("agent_text", agent="InterviewAgent", text="NEXT")
    reporter.event("handoff", agent="InterviewAgent", target="ContextVariablesAgent", rule=0)
    for index in range(520):  # the hand-off leaves the list (it keeps the last 500 events)
        reporter.event("agent_text", agent="user", text=f"msg {index}")
    page.goto(f"/runs/{reporter.run_id}/?type=handoff")
    expect(page.locator("#stream-capped")).to_be_visible()
    expect(page.locator("#stream-nomatch")).to_contain_text(
        "No event among the last 500 matches type handoff: earlier events left the list"
        " (time travel reaches them).")


def test_a_browser_clock_ten_minutes_fast_reads_a_reporting_run_as_running(page, live):
    reporter = live.reporter(enterprise_id="fast-clock")
    reporter.event(**demo_events()[0])
    page.clock.install(time=dt.datetime.now(dt.UTC) + dt.timedelta(minutes=10))
    row = f'#run-rows tr[data-run-id="{reporter.run_id}"]'
    for path, pill, took in (
        ("/runs/?enterprise_id=fast-clock", f"{row} td.status .pill", f"{row} td.duration"),
        (f"/runs/{reporter.run_id}/", "#run-status", "#run-duration"),
        ("/", f'#live-runs li[data-run-id="{reporter.run_id}"] .pill', None),
    ):
        page.goto(path)
        expect(page.locator(pill)).to_have_text("running")  # not "stale": it reported just now
        if took:
            expect(page.locator(took)).to_have_text(re.compile(r"^\d{1,2} s$"))  # not "10 min"
    reporter.event("agent_text", agent="user", text="still here")  # a live event, on its clock
    page.goto(f"/runs/{reporter.run_id}/")
    reporter.event("agent_text", agent="user", text="and again")
    expect(page.locator("#run-seq")).to_have_text("3")
    page.clock.run_for(6_000)  # the lifecycle redraws every 5 s
    expect(page.locator("#run-status")).to_have_text("running")


def test_the_panels_do_not_say_live_while_the_socket_is_away(page, live):
    reporter = live.reporter(enterprise_id="panels-away")
    for event in demo_events()[:3]:
        reporter.event(**event)
    open_run(page, reporter.run_id)
    expect(page.locator("#context-at")).to_have_text("live · after #3")
    page.evaluate("inspector.socket.minDelay = 6000; inspector.socket.drop()")
    expect(page.locator("#conn")).to_have_attribute("data-state", "offline")
    expect(page.locator("#context-at")).to_have_text("not live · after #3")
    expect(page.locator("#graph-at")).to_have_text("not live · after #3")
    reporter.event(**demo_events()[3])
    expect(page.locator("#context-at")).to_have_text("live · after #4", timeout=15_000)


# -- the keyboard --------------------------------------------------------------------------------
def test_a_focused_run_link_keeps_the_focus_while_the_lists_redraw(page, live):
    reporter = live.reporter(enterprise_id="keep-focus")
    reporter.event(**demo_events()[0])
    focused_run = "document.activeElement.closest('[data-run-id]')?.dataset.runId ?? null"
    page.clock.install()
    page.goto("/")
    page.focus(f'#live-runs li[data-run-id="{reporter.run_id}"] a')
    page.clock.run_for(6_000)  # the list redraws every 5 s (durations, stale)
    reporter.event(**demo_events()[1])  # and on every change of a run
    expect(page.locator(f'#live-runs li[data-run-id="{reporter.run_id}"]')).to_contain_text(
        "2 events")
    assert page.evaluate(focused_run) == reporter.run_id
    page.goto("/runs/?enterprise_id=keep-focus")
    page.focus(f'#run-rows tr[data-run-id="{reporter.run_id}"] a.run-link')
    reporter.event(**demo_events()[2])
    count = page.locator(f'#run-rows tr[data-run-id="{reporter.run_id}"] td.event-count')
    expect(count).to_have_text("3")
    assert page.evaluate(focused_run) == reporter.run_id
    page.keyboard.press("Enter")  # still there: Enter opens it
    expect(page).to_have_url(re.compile(rf"/runs/{reporter.run_id}/$"))


# -- the keyboard --------------------------------------------------------------------------------
def focused_seq(page) -> str:
    """The seq of the event row holding the focus, else the focused element's tag."""
    return page.evaluate(
        "document.activeElement.closest('#stream > li')?.dataset.seq"
        " ?? `outside: ${document.activeElement.tagName}`")


def test_the_events_list_is_one_tab_stop_walked_with_the_arrow_keys(page, live):
    reporter = live.reporter(enterprise_id="list-keys")
    reporter.event("agent_text", agent="user", text="first")
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(1)
    for index in range(29):  # arriving live, before the reader touched the list
        reporter.event("agent_text", agent="user", text=f"message {index}")
    expect(page.locator("#stream > li")).to_have_count(30)
    page.focus("#pause")
    page.keyboard.press("Tab")  # into the list: its newest event
    assert focused_seq(page) == "30"
    for key, seq in (("ArrowUp", "29"), ("Home", "1"), ("ArrowDown", "2"), ("End", "30")):
        page.keyboard.press(key)
        assert focused_seq(page) == seq, key
    page.keyboard.press("Tab")  # out of the list in one press, not 30
    assert focused_seq(page).startswith("outside"), focused_seq(page)
    page.keyboard.press("Shift+Tab")  # back where the reader left it
    assert focused_seq(page) == "30"
    page.keyboard.press("ArrowUp")
    for index in range(3):  # new events do not move the tab stop
        reporter.event("agent_text", agent="user", text=f"later {index}")
    expect(page.locator("#stream > li")).to_have_count(33)
    assert page.eval_on_selector_all(
        "#stream a.ev-seq:not([tabindex='-1'])", "links => links.map(a => a.textContent)"
    ) == ["#29"]
    assert focused_seq(page) == "29"
