"""The inspector in a real browser: Debian Chromium (Playwright) against a real Daphne."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid

import pytest
from playwright.sync_api import expect

from tests.inspector.conftest import OUTPUT, PROJECT, wait_until
from tests.support.demo import demo_events

pytestmark = pytest.mark.browser

XSS = "<script>window.pwned=1</script><img src=x onerror=window.pwned=1>"


def open_run(page, run_id: str) -> None:
    page.goto(f"/runs/{run_id}/")
    # connected: "live", or "ended" for a run that takes no more events
    expect(page.locator("#conn")).to_have_attribute("data-state", re.compile("^(live|ended)$"))
    expect(page.locator("#context table").first).to_be_visible()


def context_value(page, name: str):
    return page.locator(f'#context tr[data-name="{name}"] td.value')


def stream_seqs(page) -> list[int]:
    return page.eval_on_selector_all("#stream > li", "rows => rows.map(r => Number(r.dataset.seq))")


def travel(page, seq: int) -> None:
    """Move the time-travel slider as a user would (range inputs cannot be typed into)."""
    # The slider clamps to its max, which grows as the snapshot and live events arrive:
    # wait until it reaches seq, or an early move lands on an older event.
    page.wait_for_function(
        "seq => Number(document.querySelector('#travel-seq').max) >= seq", arg=seq)
    move = "(s, seq) => { s.value = String(seq); s.dispatchEvent(new Event('input')); }"
    page.eval_on_selector("#travel-seq", move, seq)


def chatter(count: int) -> list[dict]:
    return [
        {"type": "agent_text", "agent": "InterviewAgent" if i % 2 else "user", "text": f"msg {i}"}
        for i in range(count)
    ]


def test_anonymous_users_are_redirected_to_the_admin_login(anonymous_page, live):
    for path in ("/runs/", "/runs/nope/", "/workflows/Generator/preview/"):
        anonymous_page.goto(path)
        assert "/admin/login/" in anonymous_page.url and "next=" in anonymous_page.url, path
        expect(anonymous_page.locator("#id_username")).to_be_visible()


def test_a_flip_appears_live_while_simulate_run_posts_events(page, live, tmp_path):
    run_id = f"sim-{uuid.uuid4().hex[:10]}"
    script = [*chatter(12), {"type": "agent_text", "agent": "InterviewAgent", "text": " NEXT "},
              {"type": "agent_text", "agent": "ContextVariablesAgent", "text": "Declared."}]
    events_file = tmp_path / "events.jsonl"
    events_file.write_text("\n".join(json.dumps(e) for e in script) + "\n")
    simulate = subprocess.Popen(
        [sys.executable, str(PROJECT / "manage.py"), "simulate_run", "Generator",
         "--url", live.url, "--delay", "0.2", "--token", live.secret,
         "--run-id", run_id, "--events", str(events_file)],
        env=live.env, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        wait_until(lambda: live.run_exists(run_id), message="simulate_run to start the run")
        open_run(page, run_id)
        page.evaluate("window.__sameDocument = true")
        expect(context_value(page, "interview_complete")).to_have_text("false")
        expect(context_value(page, "interview_complete")).to_have_text("true", timeout=20_000)
        flip_seq = len(script) - 1
        provenance = page.locator('#context tr[data-name="interview_complete"] td.provenance')
        expect(provenance).to_contain_text(f"flipped at #{flip_seq} by InterviewAgent")
        flips = page.locator(f"#event-{flip_seq} .ev-flips")
        expect(flips).to_contain_text("interview_complete → true")
        strip = page.locator('#timeline .strip[data-flag="interview_complete"]')
        expect(strip).to_have_attribute("data-flips", "1")
        assert page.evaluate("window.__sameDocument") is True  # no reload happened
        output, _ = simulate.communicate(timeout=30)
        assert simulate.returncode == 0, output
        # simulate_run ends the run (completed) when the file does not
        expect(page.locator("#stream > li")).to_have_count(len(script) + 1)
        expect(page.locator("#run-status")).to_have_text("completed")
        provenance.get_by_role("link", name=f"at #{flip_seq}").click()
        expect(page.locator(f"#event-{flip_seq}")).to_have_class("ev ev-agent_text target")
    finally:
        if simulate.poll() is None:
            simulate.kill()
            simulate.wait()


def test_pause_buffers_events_and_resume_catches_up_in_order(page, live):
    reporter = live.reporter()
    for event in chatter(3):
        reporter.event(**event)
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(3)
    page.click("#pause")
    expect(page.locator("#pause")).to_have_attribute("aria-pressed", "true")
    for event in chatter(4):
        reporter.event(**event)
    expect(page.locator("#pause")).to_have_text("Resume live (4 new)")
    expect(page.locator("#run-seq")).to_have_text("7")  # the state stays live while paused
    assert stream_seqs(page) == [1, 2, 3]
    page.click("#pause")
    expect(page.locator("#stream > li")).to_have_count(7)
    assert stream_seqs(page) == list(range(1, 8))
    expect(page.locator("#pause")).to_have_text("Pause live")


def test_the_page_holds_still_once_its_events_show(page, live):
    """The panels draw the run as the page was rendered together with its events: drawn first
    at the stream window's start and up to 250 ms later at its end, the agents graph grew by
    160 px under the events list and moved the Pause button away from a click."""
    reporter = live.reporter()
    for event in chatter(3):
        reporter.event(**event)
    # every frame from the page's start: how many event rows show, and where Pause is
    page.add_init_script("""
      window.frames_seen = [];
      const look = () => {
        const pause = document.getElementById("pause");
        const rows = document.querySelectorAll("#stream > li").length;
        if (pause) window.frames_seen.push([rows, pause.getBoundingClientRect().top]);
        if (window.frames_seen.length < 400) requestAnimationFrame(look);
      };
      requestAnimationFrame(look);
    """)
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(3)
    expect(page.locator("#run-seq")).to_have_text("3")
    page.wait_for_timeout(500)
    seen = page.evaluate("window.frames_seen")
    once_shown = {round(top) for rows, top in seen if rows == 3}
    assert len(once_shown) == 1, f"Pause moved after the events showed: {sorted(once_shown)}"


def test_dropped_sockets_and_seq_jumps_resync_without_gaps_or_duplicates(page, live):
    reporter = live.reporter()
    open_run(page, reporter.run_id)
    total = 40
    done = threading.Event()

    def post() -> None:
        for event in chatter(total):
            reporter.event(**event)
            time.sleep(0.06)
        done.set()

    poster = threading.Thread(target=post, daemon=True)
    poster.start()
    for drop in range(3):
        time.sleep(0.3)
        expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        page.evaluate("window.inspector.socket.drop()")
        if drop == 1:
            expect(page.locator("#conn")).to_have_attribute("data-state", "live")
            # A seq that jumps ahead of last + 1 makes the page resync from its last seq.
            page.evaluate("""() => {
                const s = window.inspector.socket;
                s.receive({type: "event", seq: s.lastSeq + 5, flips: [], changes: {},
                           event: {type: "agent_text", agent: "x", text: "bogus"}});
            }""")
    poster.join(timeout=30)
    assert done.is_set()
    expect(page.locator("#stream > li")).to_have_count(total, timeout=20_000)
    assert stream_seqs(page) == list(range(1, total + 1))
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    page.wait_for_function("window.inspector.socket.stats.connects >= 5")
    stats = page.evaluate("window.inspector.socket.stats")
    assert stats["drops"] >= 3 and stats["resyncs"] == 1, stats
    assert page.locator("#stream").get_by_text("bogus").count() == 0


def test_socket_reconnects_after_the_browser_goes_offline(page, live):
    reporter = live.reporter()
    open_run(page, reporter.run_id)
    page.context.set_offline(True)
    page.evaluate("window.inspector.socket.drop()")  # an offline browser keeps idle sockets open
    expect(page.locator("#conn")).not_to_have_attribute("data-state", "live")
    for event in chatter(5):
        reporter.event(**event)
    page.context.set_offline(False)
    expect(page.locator("#stream > li")).to_have_count(5, timeout=20_000)
    assert stream_seqs(page) == [1, 2, 3, 4, 5]


def test_time_travel_shows_the_earlier_value_and_compare_lists_changes(page, live):
    reporter = live.reporter()
    for event in demo_events():
        reporter.event(**event)
    open_run(page, reporter.run_id)
    expect(context_value(page, "interview_complete")).to_have_text("true")
    travel(page, 3)
    expect(page.locator("#travel-note")).to_contain_text("after event #3 of 8")
    expect(context_value(page, "interview_complete")).to_have_text("false")
    expect(page.locator("#context-at")).to_have_text("after #3")
    expect(page.locator("#handoffs")).to_contain_text("no hand-off rules")

    page.fill("#compare-a", "3")
    page.fill("#compare-b", "8")
    page.click("#compare button[type=submit]")
    result = page.locator("#compare-result")
    expect(result).to_contain_text("From #3 to #8")
    expect(result.locator("tr", has_text="context.interview_complete")).to_contain_text("false")
    expect(result).to_contain_text("interview_complete at #5")

    page.get_by_role("button", name="Back to live").click()
    expect(context_value(page, "interview_complete")).to_have_text("true")
    expect(page.locator("#travel-note")).to_be_hidden()


def test_agent_text_with_markup_is_shown_as_text(page, live):
    reporter = live.reporter()
    reporter.event("agent_text", agent="InterviewAgent", text=XSS)
    open_run(page, reporter.run_id)
    row = page.locator("#event-1 .ev-text")
    expect(row).to_have_text(XSS)
    page.fill("#template-input", "{{InterviewAgent.text}}")
    expect(page.locator("#template-output")).to_have_text(XSS)
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("#stream script, #stream img, #template-output img").count() == 0


def graph_edge(page, rule: int):
    return page.locator(f'#graph g.edge[data-rule="{rule}"]')


def graph_node(page, agent: str):
    return page.locator(f'#graph g.node[data-agent="{agent}"]')


def test_hand_off_readiness_follows_the_live_flags(page, live):
    """The statuses are the server's (issue 15): sent as "handoffs" with the snapshot, every
    event message and the state API; the page has no copy of the condition grammar."""
    reporter = live.reporter("Routed")
    open_run(page, reporter.run_id)
    rules = page.locator("#handoffs tbody tr")
    expect(rules).to_have_count(3)
    expect(rules.nth(0)).to_contain_text("${interview_complete}")
    expect(rules.nth(0)).to_have_attribute("data-status", "not yet")
    reporter.event("agent_text", agent="InterviewAgent", text="next")
    expect(rules.nth(0)).to_have_attribute("data-status", "holds")
    expect(rules.nth(0).locator(".badge")).to_have_text("holds")
    # context_aware is false on this server, so the conjunction still waits
    expect(rules.nth(1)).to_have_attribute("data-status", "not yet")
    expect(rules.nth(1)).to_contain_text("context_aware = false")
    expect(graph_edge(page, 0)).to_have_attribute("data-status", "holds")
    travel(page, 0)  # time travel shows the readiness the state API computed at #0
    expect(rules.nth(0)).to_have_attribute("data-status", "not yet")


def test_a_production_run_shows_environment_gated_rules_as_never(page, live):
    reporter = live.reporter("Routed", environment="production")
    open_run(page, reporter.run_id)
    rules = page.locator("#handoffs tbody tr")
    expect(rules).to_have_count(3)
    expect(rules.nth(0)).to_have_attribute("data-status", "not yet")
    for gated in (1, 2):  # both name context_aware, suppressed in production
        expect(rules.nth(gated)).to_have_attribute("data-status", "never")
        expect(rules.nth(gated).locator(".badge")).to_have_text("never in this environment")
        expect(rules.nth(gated).locator(".reason")).to_contain_text("never in production")
        expect(rules.nth(gated)).to_contain_text("context_aware = (absent)")
        expect(graph_edge(page, gated)).to_have_attribute("data-status", "never")
    reporter.event("agent_text", agent="InterviewAgent", text="next")
    expect(rules.nth(0)).to_have_attribute("data-status", "holds")
    expect(rules.nth(1)).to_have_attribute("data-status", "never")


def test_without_server_readiness_the_rules_show_without_a_status(page, live):
    """A message without "handoffs" (an older server) shows the rules, and no status is guessed."""
    reporter = live.reporter("Routed")
    open_run(page, reporter.run_id)
    page.evaluate("""() => {
        const s = window.inspector.socket;
        s.receive({type: "event", seq: s.lastSeq + 1, flips: [], changes: {},
                   event: {type: "agent_text", agent: "InterviewAgent", text: "hello"}});
    }""")
    rules = page.locator("#handoffs tbody tr")
    expect(rules).to_have_count(3)
    for index in range(3):
        expect(rules.nth(index)).to_have_attribute("data-status", "unknown")
    expect(page.locator("#handoffs")).to_contain_text("Readiness unavailable")
    expect(graph_edge(page, 0)).to_have_attribute("data-status", "")
    expect(graph_node(page, "InterviewAgent")).to_have_attribute("data-current", "true")


def test_agents_graph_highlights_taken_edges_and_follows_time_travel(page, live):
    reporter = live.reporter("Routed")
    open_run(page, reporter.run_id)
    expect(page.locator("#graph g.node")).to_have_count(3)
    expect(page.locator("#graph g.edge")).to_have_count(3)
    expect(graph_edge(page, 0)).to_contain_text("${interview_complete}")
    expect(graph_edge(page, 1)).to_contain_text("${context_aware} and ${interview_co")
    expect(page.locator('#graph g.edge[data-taken="true"]')).to_have_count(0)
    expect(page.locator('#graph g.node[data-current="true"]')).to_have_count(0)

    reporter.event("agent_text", agent="InterviewAgent", text="next")  # 1
    expect(graph_node(page, "InterviewAgent")).to_have_attribute("data-current", "true")
    reporter.event("handoff", agent="InterviewAgent", target="ContextVariablesAgent", rule=0)  # 2
    expect(graph_edge(page, 0)).to_have_attribute("data-taken", "true")
    expect(graph_edge(page, 0)).to_have_attribute("data-seqs", "2")
    expect(graph_edge(page, 0)).to_have_class(re.compile(r"\btaken\b"))
    expect(graph_node(page, "ContextVariablesAgent")).to_have_attribute("data-current", "true")
    expect(graph_node(page, "InterviewAgent")).to_have_attribute("data-current", "false")
    expect(page.locator("#graph .graph-summary")).to_contain_text(
        "Current agent: ContextVariablesAgent"
    )
    expect(page.locator("#event-2")).to_contain_text("hands off to ContextVariablesAgent")
    expect(page.locator("#event-2 .ev-agent")).to_have_text("InterviewAgent")
    reporter.event("agent_text", agent="ContextVariablesAgent", text="Declared.")  # 3
    expect(page.locator("#run-seq")).to_have_text("3")

    travel(page, 1)  # before the hand-off: no highlight, InterviewAgent current
    expect(page.locator("#graph-at")).to_have_text("after #1")
    expect(graph_edge(page, 0)).to_have_attribute("data-taken", "false")
    expect(page.locator('#graph g.edge[data-taken="true"]')).to_have_count(0)
    expect(graph_node(page, "InterviewAgent")).to_have_attribute("data-current", "true")
    travel(page, 2)
    expect(page.locator("#graph-at")).to_have_text("after #2")
    expect(graph_edge(page, 0)).to_have_attribute("data-taken", "true")
    page.get_by_role("button", name="Back to live").click()
    expect(page.locator("#graph-at")).to_contain_text("live")
    expect(graph_edge(page, 0)).to_have_attribute("data-taken", "true")
    graph_edge(page, 0).click()  # a taken edge links to the event that took it
    expect(page.locator("#event-2")).to_have_class(re.compile(r"\btarget\b"))

    # a hand-off no rule declares is drawn apart (dashed), and a fresh page reads the path
    # from the server's snapshot
    reporter.event("handoff", agent="ContextVariablesAgent", target="InterviewAgent")  # 4
    unplanned = page.locator("#graph g.edge.unplanned")
    expect(unplanned).to_have_attribute("data-taken", "true")
    expect(unplanned).to_have_attribute("data-seqs", "4")
    page.reload()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(graph_edge(page, 0)).to_have_attribute("data-seqs", "2")
    expect(page.locator("#graph g.edge.unplanned")).to_have_attribute("data-seqs", "4")
    expect(graph_node(page, "InterviewAgent")).to_have_attribute("data-current", "true")
    expect(page.locator("#filter-type option", has_text="handoff")).to_have_count(1)


def test_template_preview_resolves_at_the_selected_seq_and_highlights_unresolved(page, live):
    reporter = live.reporter()
    for event in demo_events():
        reporter.event(**event)
    open_run(page, reporter.run_id)
    field = page.get_by_label("Template to resolve against this run's state")  # named, not only
    field.fill("{{enterprise_id}} done={{interview_complete}} {{nowhere.at_all}}")  # a hint
    output = page.locator("#template-output")
    expect(output).to_have_text("acme done=true {{nowhere.at_all}}")
    expect(output.locator("mark.unresolved")).to_have_text("{{nowhere.at_all}}")
    expect(page.locator("#template-unresolved")).to_contain_text("nowhere.at_all")
    travel(page, 2)
    expect(output).to_have_text("acme done=false {{nowhere.at_all}}")
    page.select_option("#template-syntax", "system")
    page.fill("#template-input", "Enterprise {enterprise_id}, tier {product_tier}, {missing}")
    expect(output).to_have_text("Enterprise acme, tier beta, {missing}")
    expect(output.locator("mark.unresolved")).to_have_text("{missing}")


def test_event_filters_by_agent_and_type(page, live):
    reporter = live.reporter()
    for event in demo_events():
        reporter.event(**event)
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(8)
    page.select_option("#filter-agent", "InterviewAgent")
    expect(page.locator("#stream > li:visible")).to_have_count(3)
    page.select_option("#filter-agent", "")
    page.select_option("#filter-type", "tool_response")
    expect(page.locator("#stream > li:visible")).to_have_count(1)
    expect(page.locator("#stream > li:visible")).to_contain_text("save_context_plan")


def test_production_runs_show_suppressed_environment_variables(page, live):
    reporter = live.reporter(environment="production")
    open_run(page, reporter.run_id)
    row = page.locator('#context tr[data-name="context_aware"]')
    expect(row.locator("td.value")).to_have_text("(absent)")
    expect(row.locator("td.provenance")).to_contain_text("$CONTEXT_AWARE")
    expect(row.locator("td.provenance .badge")).to_have_text("suppressed")
    expect(row.locator("td.provenance")).to_contain_text("suppressed in production")
    database = page.locator('#context tr[data-name="concept_overview"] td.provenance')
    expect(database).to_contain_text("db.autogen_ai_agents.Concepts.ConceptOverview")
    expect(database.locator(".badge")).to_have_text("resolved")
    static = page.locator('#context tr[data-name="product_tier"] td.provenance')
    expect(static).to_have_text("static")


def test_runs_list_shows_new_runs_and_their_progress_without_reload(page, live):
    page.goto("/runs/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    page.evaluate("window.__sameDocument = true")
    reporter = live.reporter(enterprise_id="initech")
    row = page.locator(f'#run-rows tr[data-run-id="{reporter.run_id}"]')
    expect(row).to_be_visible()
    expect(row).to_contain_text("initech")
    for event in demo_events():
        reporter.event(**event)
    expect(row.locator(".event-count")).to_have_text("8")
    expect(row.locator(".flags")).to_contain_text("interview_complete")
    reporter.event("run_status", status="completed")
    expect(row).to_have_attribute("data-status", "completed")
    assert page.evaluate("window.__sameDocument") is True
    row.locator("a.run-link").click()
    expect(page).to_have_url(f"{live.url}/runs/{reporter.run_id}/")


def test_runs_list_filters_apply_to_live_rows(page, live):
    page.goto("/runs/?environment=production&enterprise_id=umbrella")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    development = live.reporter(enterprise_id="umbrella", environment="development")
    production = live.reporter(enterprise_id="umbrella", environment="production")
    expect(page.locator(f'#run-rows tr[data-run-id="{production.run_id}"]')).to_be_visible()
    expect(page.locator(f'#run-rows tr[data-run-id="{development.run_id}"]')).to_have_count(0)
    expect(page.locator("#run-rows tr")).to_have_count(1)


_COLORS = """sel => [...document.querySelectorAll(sel)].slice(0, 5).map(node => {
  let back = node, bg = "rgba(0, 0, 0, 0)";
  while (back && (bg === "rgba(0, 0, 0, 0)" || bg === "transparent")) {
    bg = getComputedStyle(back).backgroundColor; back = back.parentElement;
  }
  return [getComputedStyle(node).color, bg];
})"""


def _contrast(foreground: str, background: str) -> float:
    def luminance(css: str) -> float:
        red, green, blue = (int(part) / 255 for part in re.findall(r"\d+", css)[:3])
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
                  for c in (red, green, blue)]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_muted_text_on_chips_reads_at_4_5_to_1(page, live, scheme):
    """"never in production" badges and "(absent)" values were 4.36:1 in light mode."""
    page.emulate_media(color_scheme=scheme)
    page.goto("/workflows/Routed/preview/?CONTEXT_AWARE=on")
    expect(page.locator(".status-never").first).to_be_visible()
    pairs = []
    for selector in (".status-never", ".absent", ".reason", ".muted"):
        pairs += page.evaluate(_COLORS, selector)
    assert pairs
    for foreground, background in pairs:
        assert _contrast(foreground, background) >= 4.5, (scheme, foreground, background)


def test_workflow_preview_shows_development_and_production_and_fetches_now(page, live):
    page.goto("/workflows/Generator/preview/?CONTEXT_AWARE=yes")
    table = page.locator("#preview")
    expect(table.locator("thead")).to_contain_text("development")
    expect(table.locator("thead")).to_contain_text("production")
    aware = table.locator('tr[data-name="context_aware"]')
    expect(aware.locator('td[data-environment="development"] .value')).to_have_text("true")
    production = aware.locator('td[data-environment="production"]')
    expect(production).to_contain_text("suppressed in production")
    expect(page.locator('input[name="CONTEXT_AWARE"]')).to_have_value("yes")

    concept = table.locator('tr[data-name="concept_overview"] td[data-environment="development"]')
    expect(concept).to_contain_text("not looked up yet")
    concept.get_by_role("button", name="Fetch now").click()
    expect(concept.locator(".value")).to_contain_text("Acme builds a marketplace")
    expect(concept.locator(".prov")).to_contain_text("resolved")
    # written as every time on these pages is (it was the browser's local time, "2:13:58 PM")
    expect(concept.locator(".prov")).to_contain_text(
        re.compile(r"looked up at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
    )

    page.goto("/workflows/Generator/preview/?enterprise_id=nobody")
    concept = page.locator(
        '#preview tr[data-name="concept_overview"] td[data-environment="production"]'
    )
    concept.get_by_role("button", name="Fetch now").click()
    expect(concept.locator(".prov")).to_contain_text("unresolved")
    expect(concept.locator(".prov")).to_contain_text("no document in autogen_ai_agents.Concepts")

    page.goto("/workflows/Routed/preview/?CONTEXT_AWARE=on")
    gated = page.locator("#preview-handoffs tbody tr").nth(2)  # ${context_aware}
    expect(gated.locator('td[data-environment="development"] .badge')).to_have_text("holds")
    expect(gated.locator('td[data-environment="production"] .badge')).to_have_text(
        "never in production"
    )


def test_run_page_screenshots_at_desktop_and_narrow_widths(page, live):
    reporter = live.reporter("Routed")
    for event in demo_events():
        reporter.event(**event)
    open_run(page, reporter.run_id)
    expect(page.locator("#stream > li")).to_have_count(8)
    template = "Assisting {{enterprise_id}} ({{product_tier}}): {{concept_overview}}"
    page.fill("#template-input", template)
    expect(page.locator("#template-output")).to_contain_text("Assisting acme (beta)")
    reporter.event("handoff", agent="InterviewAgent", target="ContextVariablesAgent", rule=0)
    expect(graph_edge(page, 0)).to_have_attribute("data-taken", "true")
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "run-page.png"), full_page=True)
    page.emulate_media(color_scheme="dark")
    page.locator("#graph").screenshot(path=str(OUTPUT / "run-graph-dark.png"))
    page.screenshot(path=str(OUTPUT / "run-page-dark.png"), full_page=True)
    page.emulate_media(color_scheme="light")
    page.locator("#graph").screenshot(path=str(OUTPUT / "run-graph.png"))
    hint = page.locator("#graph .graph-scroll-hint")
    expect(hint).to_be_hidden()  # the graph fits a desktop panel
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    # wider than a phone: it scrolls (from the keyboard too), and the page says so
    expect(hint).to_be_visible()
    expect(hint).to_have_text("Wider than the screen: scroll sideways to see all of it.")
    scroller = page.locator("#graph .graph-scroll")
    expect(scroller).to_have_attribute("tabindex", "0")
    scroller.focus()
    before = scroller.evaluate("node => node.scrollLeft")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(150)
    assert scroller.evaluate("node => node.scrollLeft") != before
    page.screenshot(path=str(OUTPUT / "run-page-narrow.png"), full_page=True)
    assert (OUTPUT / "run-page.png").stat().st_size > 10_000
