"""The run page with more than its first drawings expected (round 3 of exploratory testing, items
9, 14 and 16), in Debian Chromium against a real Daphne: a flags timeline of 1,200 flips drawn
grouped with short accessible names; an agents graph whose labels never overlap, whose height
is bounded with 40 agents and whose cut names keep their full text; and a warnings list that
says how many of the header's count it shows, and loads all of them."""

from __future__ import annotations

import re

import pytest
from contextadmin_sdk.client import RunReporter
from playwright.sync_api import expect

from tests.inspector.conftest import OUTPUT
from tests.inspector.test_browser import open_run
from tests.support.demo import demo_config

pytestmark = pytest.mark.browser

FLAGS = ["flag_a", "flag_b", "flag_c", "flag_d"]
FLIPS = 1200
BUCKETS = 50  # static/inspector/timeline.js: a grouped strip's ranges
LIST_CAP = 500  # static/inspector/stream.js MAX_ROWS


def batched(live, **start) -> RunReporter:
    """A run whose events go in batches of 100 (a thousand events take a second, not minutes)."""
    reporter = RunReporter(live.url, live.secret, batch_size=100, retries=2)
    reporter.start(enterprise_id="acme", **{"workflow": "Generator", **start})
    return reporter


def post(reporter: RunReporter, events: list[dict]) -> None:
    for event in events:
        fields = dict(event)
        reporter.event(fields.pop("type"), **fields)
    assert reporter.flush(timeout=60)


def four_flags() -> dict:
    """The demo workflow with four derived flags (a tool sets them: each set is a flip)."""
    config = demo_config()
    trigger = config["context_variables"]["derived_variables"][0]["triggers"]
    config["context_variables"]["derived_variables"] = [
        {"name": name, "type": "boolean", "description": "", "default": False, "triggers": trigger}
        for name in FLAGS
    ]
    return config


def test_twelve_hundred_flips_are_drawn_grouped_with_short_accessible_names(page, live):
    reporter = batched(live, definitions=four_flags())
    values = dict.fromkeys(FLAGS, False)
    events = []
    for seq in range(1, FLIPS + 1):
        name = FLAGS[seq % len(FLAGS)]
        values[name] = not values[name]
        events.append({"type": "context_set", "name": name, "value": values[name],
                       "tool": "toggle_flag"})
    post(reporter, events)
    open_run(page, reporter.run_id)
    expect(page.locator("#run-seq")).to_have_text(str(FLIPS))

    strips = page.locator("#timeline .strip[data-flag]")
    expect(strips).to_have_count(len(FLAGS))
    expect(page.locator('#timeline .strip[data-grouped="true"]')).to_have_count(len(FLAGS))
    for index in range(len(FLAGS)):
        strip = strips.nth(index)
        expect(strip).to_have_attribute("data-flips", str(FLIPS // len(FLAGS)))
        buckets = strip.locator("g.bucket")
        assert 0 < buckets.count() <= BUCKETS
        label = strip.locator("svg.strip-svg").get_attribute("aria-label")
        assert len(label) <= 200, label
        assert label.startswith(f"{FLAGS[index]}: 300 flips, grouped in {BUCKETS} ranges")
        assert strip.locator("g.mark").count() == 0  # no flip drawn one by one
    expect(page.locator("#timeline-summary")).to_contain_text(
        f"1,200 flips of 4 flags; latest: flag_a → false, set by tool toggle_flag at #{FLIPS}")

    # bounded: every accessible name and node of the timeline together, ~325 KB of names before
    names, nodes = page.eval_on_selector("#timeline", """timeline => [
        [...timeline.querySelectorAll('[aria-label]')]
            .reduce((sum, node) => sum + node.getAttribute('aria-label').length, 0),
        timeline.querySelectorAll('*').length]""")
    assert names < 20_000, names
    assert nodes < 1_500, nodes
    page.locator("#timeline").screenshot(path=str(OUTPUT / "run-flags-1200-flips.png"))

    # a group is a link to its first flip's event (the last range's is still in the list)
    last = strips.nth(0).locator("g.bucket").last
    first = int(last.get_attribute("data-first"))
    assert int(last.get_attribute("data-count")) > 1
    expect(last).to_have_attribute(
        "aria-label", re.compile(r"^flag_a: \d+ flips from #\d+ to #\d+$"))
    last.click()
    expect(page.locator(f"#event-{first}")).to_have_class(re.compile(r"\btarget\b"))
    reporter.close()


def label_collisions(page) -> list:
    """Every pair of edge labels whose boxes intersect, and every label on an agent."""
    return page.evaluate("""() => {
        const box = (node) => node.getBoundingClientRect();
        const hit = (a, b) => a.left < b.right && b.left < a.right
            && a.top < b.bottom && b.top < a.bottom;
        const labels = [...document.querySelectorAll('#graph g.edge')].map((edge) => [
            edge.querySelector('text').textContent, box(edge.querySelector('rect.edge-label-bg'))]);
        const agents = [...document.querySelectorAll('#graph g.node')]
            .map((node) => [node.dataset.agent, box(node.querySelector('rect.node-box'))]);
        const found = [];
        labels.forEach(([text, rect], i) => {
            labels.slice(i + 1).forEach(([other, its]) => {
                if (hit(rect, its)) found.push([text, other]);
            });
            agents.forEach(([agent, its]) => { if (hit(rect, its)) found.push([text, agent]); });
        });
        return found;
    }""")


def test_edge_labels_never_overlap_each_other_or_an_agent(page, live):
    reporter = live.reporter("Routed")
    reporter.event("agent_text", agent="InterviewAgent", text="hello")
    reporter.event("handoff", agent="InterviewAgent", target="HandoffsAgent")  # rule 2
    # two hand-overs no rule declares, back up the chain: their "no rule" labels landed on
    # the rules' labels ("${context_aware} and ${inte…" and "no rule" overlapped)
    reporter.event("handoff", agent="HandoffsAgent", target="ContextVariablesAgent")
    reporter.event("handoff", agent="ContextVariablesAgent", target="InterviewAgent")
    open_run(page, reporter.run_id)
    expect(page.locator("#graph g.edge.unplanned")).to_have_count(2)
    expect(page.locator("#graph g.edge")).to_have_count(5)
    assert label_collisions(page) == []
    reporter.close()


LONG = "ResearchCoordinatorAgentForEnterpriseOnboardingAndCompliance"  # 60 characters: cut
TWO_LINES = "ResearchCoordinatorAgentForOnboarding"  # 37: shown whole, on two lines


def test_forty_agents_fit_a_bounded_box_and_a_cut_name_keeps_its_full_text(page, live):
    agents = [LONG, TWO_LINES] + [f"Agent{i:02d}" for i in range(38)]
    reporter = batched(live)
    post(reporter, [{"type": "agent_text", "agent": name, "text": "here"} for name in agents])
    open_run(page, reporter.run_id)
    expect(page.locator("#graph g.node")).to_have_count(40)

    # 40 agents were 14 rows, ~1,350 px down the page: now more a row, in a box of bounded height
    box = page.locator("#graph .graph-scroll").bounding_box()
    assert box["height"] <= 600, box
    natural = page.eval_on_selector("#graph svg", "svg => svg.viewBox.baseVal.height")
    assert natural < 800, natural
    expect(page.locator("#graph .graph-scroll-hint")).to_be_visible()  # says it scrolls
    assert label_collisions(page) == []
    page.locator("#graph").screenshot(path=str(OUTPUT / "run-graph-40-agents.png"))

    cut = page.locator(f'#graph g.node[data-agent="{LONG}"]')
    expect(cut).to_have_attribute("data-cut", "true")
    shown = cut.locator("text.node-name").text_content()
    assert shown.endswith("…") and shown != LONG
    expect(cut.locator("title")).to_have_text(f"{LONG} (visited)")  # the tooltip
    expect(page.get_by_role("img", name=f"{LONG} (visited)")).to_have_count(1)  # its name
    whole = page.locator(f'#graph g.node[data-agent="{TWO_LINES}"]')
    expect(whole).to_have_attribute("data-cut", "false")
    expect(whole.locator("tspan")).to_have_count(2)
    assert whole.locator("text.node-name").text_content() == TWO_LINES
    reporter.close()


WARNING = {"type": "warning", "name": "max_items", "value": 40, "agent": "InterviewAgent",
           "tool": "tune_limits", "rule": "constant",
           "text": "name: declarative variable max_items is a constant"}


def test_the_warnings_list_says_how_many_of_the_headers_count_it_shows(page, live):
    reporter = batched(live)
    chat = {"type": "agent_text", "agent": "user", "text": "hello"}
    events = [WARNING if seq % 10 == 0 else chat for seq in range(1, 601)]
    post(reporter, events)  # 60 warnings; the list keeps the last 500 events: 50 of them
    page.goto(f"/runs/{reporter.run_id}/?type=warning")
    expect(page.locator("#run-warnings-count")).to_have_text("60")
    expect(page.locator("#stream > li:visible")).to_have_count(50)
    line = page.locator("#stream-warnings")
    expect(line).to_contain_text(
        f"Showing the latest 50 of 60 warnings: the list keeps the last {LIST_CAP} events.")

    page.get_by_role("button", name="Show all 60 warnings").click()
    every = page.locator("#warnings-all > li")
    expect(every).to_have_count(60)
    expect(line).to_contain_text("All 60 warnings of the run, from the server.")
    expect(every.first).to_have_attribute("data-seq", "600")  # newest first
    page.locator(".stream-panel").screenshot(path=str(OUTPUT / "run-warnings-all.png"))
    expect(every.last).to_contain_text("refused max_items = 40 by tool tune_limits")
    every.last.locator("a.ev-seq").click()  # #10 left the list: the state after it instead
    expect(page.locator("#travel-note")).to_contain_text("after event #10 of 600")

    post(reporter, [WARNING])  # live: the header counts it, the line says it is not loaded yet
    expect(page.locator("#run-warnings-count")).to_have_text("61")
    expect(line).to_contain_text("1 warning more since")
    line.get_by_role("button", name="load again").click()
    expect(every).to_have_count(61)
    expect(line).to_contain_text("All 61 warnings of the run")

    page.select_option("#filter-type", "")  # the line is about the warnings filter only
    expect(line).to_be_hidden()
    page.goto(f"/runs/{reporter.run_id}/")
    page.click("#run-warnings-link")  # the header's count shows the same line
    expect(line).to_contain_text("Showing the latest 51 of 61 warnings")
    reporter.close()
