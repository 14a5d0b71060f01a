// The run page: wires the live socket to the model (run_model.js), the panels (run_render.js),
// the event stream, time travel and compare (run_travel.js) and the template preview
// (template_preview.js). What the server computes (readiness, the normalised sender, the names
// of categories, namespaces and event types) is displayed as sent, never recomputed here.

import { jsonScript } from "./dom.js";
import { clockFrom, lastActivity } from "./lifecycle.js";
import { applyEvent, applySnapshot, runModel } from "./run_model.js";
import { runPanels } from "./run_render.js";
import { RunView, timeTravel } from "./run_travel.js";
import { warningsNotice } from "./run_warnings.js";
import { LiveSocket } from "./socket.js";
import { passedOver } from "./passed_over.js";
import { EventStream, senderOf } from "./stream.js";
import { templatePreview } from "./template_preview.js";
import { readState, writeState } from "./urlstate.js";

const root = document.getElementById("inspector");
const page = jsonScript("page-data");
clockFrom(page.now); // stale and durations on the server's clock
const { namespaces, event_types: eventTypes } = page.constants;
const outputNamespaces = page.constants.output_namespaces || [];
const ENDED = new Set(page.constants.ended_statuses); // the engine's: completed, failed, cancelled (not paused)
const $ = (id) => document.getElementById(id);

const model = runModel(page);
const view = new RunView();
const initial = readState(); // the shared view: ?at, ?agent, ?type, ?compare, ?event
let conn = { state: "connecting", detail: {} }; // the socket's last reported state

const stream = new EventStream({
  list: $("stream"), empty: $("stream-empty"),
  agentSelect: $("filter-agent"), typeSelect: $("filter-type"), pauseButton: $("pause"),
  noMatch: $("stream-nomatch"), capped: $("stream-capped"), types: eventTypes,
  onFilter: ({ agent, type }) => {
    writeState({ agent, type });
    warnings.update();
  },
  onSelect: (seq) => writeState({ event: seq }),
  onRender: () => warnings.update(),
});
stream.setFilters(initial);
if (initial.event !== null) {
  stream.highlight(initial.event);
  stream.scrollPending = initial.event;
}

function jump(seq) {
  // an event no longer in the list: show the list's head, which says where earlier events are
  if (!stream.jumpTo(seq)) $("stream").closest("section").scrollIntoView({ block: "start" });
}

// while the list shows the warnings: how many of the header's count it holds, and all of them
const warnings = warningsNotice({
  box: $("stream-warnings"), list: $("stream"), url: root.dataset.warningsUrl, limit: page.warnings_shown,
  total: () => model.warnings, typeSelect: $("filter-type"),
  onShow(seq) { // the event if the list holds it, else the state after it
    if (!stream.jumpTo(seq)) travel.travelTo(seq);
  },
});

const { resolveSoon, followLive } = templatePreview({
  url: root.dataset.resolveUrl,
  at: () => (view.live ? null : view.seq),
  shown: () => (view.live ? model.lastSeq : view.seq),
});
let selectedUnshown = initial.event; // the URL's event: brought into view once the panels drew
const panels = runPanels({
  page, model, view, jump,
  conn: () => conn,
  afterRender() {
    travel.follow();
    warnings.update();
    if (view.live) followLive();
    // the panels above the list grew as they drew and pushed the row the list had scrolled to
    // out of the window: scroll to it once more, after their first settled drawing
    const row = settled && selectedUnshown !== null && document.getElementById(`event-${selectedUnshown}`);
    if (row) {
      selectedUnshown = null;
      row.scrollIntoView({ block: "center" });
    }
  },
});
const travel = timeTravel({
  url: root.dataset.stateUrl, model, view, initial, namespaces, outputNamespaces, jump,
  changed() {
    panels.schedule();
    resolveSoon();
  },
});

/** Show the view the URL names, once the page has caught up to the run as it was rendered
 * (the first snapshot is the state at the stream window's start, not the live end). */
let restored = false;
function restoreOnce() {
  if (restored || model.lastSeq < page.run.event_count) return;
  restored = true;
  travel.restore(initial);
}

/** The panels first draw the run as the page was rendered, at once, not the replay on the way
 * there: drawn from the first snapshot, then again up to 250 ms later, the agents graph grew
 * under the events list and moved what a reader was about to click. */
let settled = false;
function redraw() {
  if (settled) {
    panels.schedule();
  } else if (model.lastSeq >= page.run.event_count) {
    settled = true;
    panels.schedule({ now: true });
  }
}
setTimeout(() => { // a catch-up that never reaches the rendered count still gets drawn
  if (!settled) {
    settled = true;
    panels.schedule();
  }
}, 1000);

// The header's warning count filters the events list to the warnings.
$("run-warnings-link").addEventListener("click", (event) => {
  event.preventDefault();
  stream.setFilters({ agent: "", type: "warning" });
  writeState({ agent: "", type: "warning" });
  warnings.update();
  $("stream").closest("section").scrollIntoView({ block: "start" });
});

const socket = new LiveSocket(root.dataset.wsPath, {
  sequenced: true,
  after: page.stream_after,
  onStatus(state, detail) {
    const changed = state !== conn.state;
    conn = { state, detail };
    panels.showConn();
    if (changed) panels.schedule(); // the panels say whether what they show is live
  },
  onMessage(message) {
    if (message.type === "snapshot") {
      applySnapshot(model, message, outputNamespaces);
    } else if (message.type === "event") {
      const before = { readiness: model.readiness, current: model.execution.current_agent,
        resumed: model.resumes.some((resume) => resume.seq === message.seq - 1) };
      applyEvent(model, message, ENDED);
      message.passed = passedOver(message, before, senderOf(message)); // the rules that held, not taken here
      stream.add(message);
    } else {
      if (message.type === "error") $("conn").title = message.error;
      return;
    }
    redraw();
    restoreOnce();
  },
}).start();

window.inspector = {
  socket, stream, model, view: () => view, travelTo: travel.travelTo, goLive: travel.goLive, lastActivity,
};
