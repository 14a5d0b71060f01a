"""Issue 22, the operator's path in a real browser (Debian Chromium, Playwright, real Daphne):
the front page's published version, a run page's last event and connection pill, the labels of
supplied values and flipped flags, the user on the agents graph, the graph at 400 px, and one
date form on the runs list and the run page."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.inspector.test_browser import open_run
from tests.inspector.test_everyday_browser import shell
from tests.support.demo import demo_events

pytestmark = pytest.mark.browser

UTC_FORM = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")  # every page's one date form


def test_front_page_shows_each_workflows_own_published_version(page, live):
    """Review off, three saves: the workflow's v3 is published. The front page read another
    workflow's published number (v1) and called v3 a draft awaiting review."""
    name = f"Zeta{uuid.uuid4().hex[:6]}"  # after "Generator" (v1) in the list's order
    shell(live, f"""
from contextadmin.models import Workflow
from contextadmin.services import workflow_import, workflow_version_record
from tests.support.demo import demo_config
workflow_import(name={name!r}, data=demo_config())
workflow = Workflow.objects.get(name={name!r})
for text in ("second", "third"):
    Workflow.objects.filter(pk=workflow.pk).update(description=text)
    workflow.refresh_from_db()
    workflow_version_record(workflow=workflow)
""")
    page.goto("/")
    published = page.locator(f'#workflows tr[data-workflow="{name}"] td.published')
    expect(published).to_have_text("v3")  # no "draft v3 awaits review"
    expect(page.locator('#workflows tr[data-workflow="Generator"] td.published')).to_have_text(
        "v1")


def test_an_ended_runs_page_shows_its_last_event_time_and_no_live_pill(page, live):
    reporter = live.reporter(enterprise_id="last-event")
    for event in demo_events()[:3]:
        reporter.event(**event)
    reporter.event("run_status", status="completed")
    # the run's last event, received long ago (the page used to show when it loaded)
    shell(live, f"""
import datetime as dt
from runs.models import RunEvent
RunEvent.objects.filter(run_id={reporter.run_id!r}, seq=4).update(
    received_at=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
""")
    for _ in range(2):  # and again after a reload
        page.goto(f"/runs/{reporter.run_id}/")
        expect(page.locator("#stream > li")).to_have_count(4)  # every event replayed
        page.wait_for_timeout(600)  # the panels redraw at most every 250 ms: let them settle
        assert page.locator("#run-last-event").inner_text() == "2026-01-02 03:04:05 UTC"
        expect(page.locator("#conn")).to_have_attribute("data-state", "ended")
        expect(page.locator("#conn")).to_have_text("ended")
        expect(page.locator("#context-at")).to_have_text("final · after #4")


def test_a_paused_run_stays_live_and_its_last_event_follows_new_events(page, live):
    reporter = live.reporter(enterprise_id="paused")
    reporter.event(**demo_events()[0])
    open_run(page, reporter.run_id)
    reporter.event("run_status", status="paused")
    expect(page.locator("#run-status")).to_have_text("paused")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("#run-ended")).to_have_text("not yet")
    expect(page.locator("#context-at")).to_have_text("live · after #2")
    last = page.locator("#run-last-event")
    expect(last).to_have_text(UTC_FORM)


def test_supplied_values_are_labelled_as_the_preview_labels_them(page, live):
    """An environment variable the runtime supplied reads $CONTEXT_AWARE (the preview page's
    label), not $runtime; a derived flag flipped later says how, not "supplied at start"."""
    reporter = live.reporter(
        enterprise_id="supplied",
        context={"context_aware": True, "interview_complete": False, "concept_overview": "x"},
    )
    for event in demo_events():
        reporter.event(**event)
    open_run(page, reporter.run_id)
    source = page.locator('#context tr[data-name="context_aware"] td.provenance')
    expect(source).to_contain_text("$CONTEXT_AWARE")
    expect(source).not_to_contain_text("$runtime")
    expect(source).to_contain_text("supplied by the runtime at start")
    database = page.locator('#context tr[data-name="concept_overview"] td.provenance')
    expect(database).to_contain_text("db.autogen_ai_agents.Concepts.ConceptOverview")
    flag = page.locator('#context tr[data-name="interview_complete"] td.provenance')
    expect(flag).to_contain_text("flipped at #5 by InterviewAgent")
    expect(flag).not_to_contain_text("supplied by the runtime at start")

    page.goto("/workflows/Generator/preview/")
    expect(page.locator("body")).to_contain_text("$CONTEXT_AWARE")


def test_the_agents_graph_connects_the_user_and_every_speaker(page, live):
    reporter = live.reporter(enterprise_id="graph-user")
    for event in demo_events():
        reporter.event(**event)
    open_run(page, reporter.run_id)
    expect(page.locator("#run-seq")).to_have_text(str(len(demo_events())))
    exchanges = page.locator("#graph g.edge.exchange")
    user = exchanges.and_(page.locator('[data-source="user"], [data-target="user"]'))
    expect(user).to_have_count(1)
    # the user answered twice, and the agent spoke after each answer
    expect(user.locator("text")).to_have_text("4 turns")
    agents = page.eval_on_selector_all("#graph g.node", "nodes => nodes.map(n => n.dataset.agent)")
    ends = page.eval_on_selector_all(
        "#graph g.edge", "edges => edges.flatMap(e => [e.dataset.source, e.dataset.target])")
    assert set(agents) == {"InterviewAgent", "user", "ContextVariablesAgent", "HandoffsAgent"}
    assert set(agents) <= set(ends), "an agent that spoke is left unconnected"


def test_the_agents_graph_stays_readable_at_400_px(chromium, live, staff_state):
    reporter = live.reporter(enterprise_id="narrow-graph")
    for event in demo_events():
        reporter.event(**event)
    context = chromium.new_context(base_url=live.url, storage_state=staff_state,
                                   viewport={"width": 400, "height": 900}, color_scheme="dark")
    try:
        page = context.new_page()
        open_run(page, reporter.run_id)
        expect(page.locator("#graph g.edge.exchange").first).to_be_attached()
        scale = page.eval_on_selector(
            "#graph svg", "svg => svg.getBoundingClientRect().width / svg.viewBox.baseVal.width")
        assert scale >= 0.99, f"the graph is drawn at {scale:.2f} of its size: labels too small"
        label = page.locator("#graph text.edge-label").first
        assert label.bounding_box()["height"] >= 10
        # the panel itself does not overflow the page: the graph scrolls inside it
        assert page.evaluate("document.documentElement.scrollWidth") <= 400
        current = page.locator('#graph g.node[data-current="true"]')
        box, view = current.bounding_box(), page.locator(".graph-scroll").bounding_box()
        assert view["x"] <= box["x"] and box["x"] + box["width"] <= view["x"] + view["width"]
    finally:
        context.close()


def test_runs_list_and_run_page_write_dates_one_way_and_page_two_links_newer(page, live):
    tag = f"paged{uuid.uuid4().hex[:6]}"
    shell(live, f"""
import datetime as dt
from django.utils import timezone
from runs.models import Run
base = timezone.now() - dt.timedelta(days=1)
runs = [Run(id=f"{tag}-{{i:03d}}", workflow_name="Generator", definitions={{}},
            definitions_hash="x", enterprise_id="{tag}", status="completed",
            state={{"flips": []}}) for i in range(60)]
Run.objects.bulk_create(runs)
for i, run in enumerate(runs):
    run.started_at = base + dt.timedelta(minutes=i)
Run.objects.bulk_update(runs, ["started_at"])
""")
    page.goto(f"/runs/?enterprise_id={tag}")
    first = page.locator("#run-rows > tr").first.locator("td").first
    expect(first).to_have_text(UTC_FORM)
    page.click("#page-older")
    expect(page.locator("#run-rows > tr")).to_have_count(10)
    newer = page.locator("#page-newer-top")
    expect(newer).to_be_in_viewport()  # at the top, not only under the table
    newer.click()
    expect(page.locator("#run-rows > tr")).to_have_count(50)
    expect(page.locator("#page-newer-top")).to_have_count(0)

    reporter = live.reporter(enterprise_id="dates")
    reporter.event(**demo_events()[0])
    open_run(page, reporter.run_id)
    expect(page.locator("#run-last-event")).to_have_text(UTC_FORM)
    started = page.locator(".run-meta time").first.inner_text()
    assert UTC_FORM.match(started), started
    page.goto("/runs/?enterprise_id=dates")
    listed = page.locator(f'#run-rows tr[data-run-id="{reporter.run_id}"] td').first
    expect(listed).to_have_text(started)  # the same run, the same words


def test_front_page_and_runs_list_fit_400_px_and_label_their_values(chromium, live, staff_state):
    """The walk at 400 px: the front page's workflows cut off their links, and the runs list's
    stacked rows showed two times and a number with nothing saying which is which."""
    reporter = live.reporter(enterprise_id="narrow-list")
    reporter.event(**demo_events()[0])
    context = chromium.new_context(base_url=live.url, storage_state=staff_state,
                                   viewport={"width": 400, "height": 900})
    try:
        page = context.new_page()
        page.goto("/")
        links = page.locator('#workflows tr[data-workflow="Generator"] a[data-link="runs"]')
        expect(links).to_be_visible()
        box = links.bounding_box()
        assert box["x"] + box["width"] <= 400
        page.goto("/runs/?enterprise_id=narrow-list")
        row = page.locator(f'#run-rows tr[data-run-id="{reporter.run_id}"]')
        labels = row.locator("td[data-label]").evaluate_all(
            "cells => cells.map(c => getComputedStyle(c, '::before').content)")
        assert '"last event "' in labels and '"started "' in labels, labels
    finally:
        context.close()
