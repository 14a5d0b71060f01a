// The run page: wires the live socket to the context, timeline, hand-offs, agents graph, stream
// and tools. What the server computes (readiness, the normalised sender, the names of categories,
// namespaces and event types) is displayed as sent, never recomputed here.

import { renderContext, setBy } from "./context.js";
import { debounce, el, getJSON, jsonScript, replace, setText, when } from "./dom.js";
import { renderGraph } from "./graph.js";
import { renderHandoffs } from "./handoffs.js";
import { renderNamespaces, writeAt } from "./namespaces.js";
import { isStale, lastActivity, runDuration, statusKey, statusLabel } from "./lifecycle.js";
import { LiveSocket, showStatus } from "./socket.js";
import { EventStream, senderOf } from "./stream.js";
import { renderTimeline } from "./timeline.js";
import { renderDiff } from "./travel.js";
import { readState, writeState } from "./urlstate.js";

const root = document.getElementById("inspector");
const urls = { state: root.dataset.stateUrl, resolve: root.dataset.resolveUrl };
const page = jsonScript("page-data");
const { categories, namespaces, event_types: eventTypes, base_flags: baseFlags } = page.constants;
const outputNamespaces = page.constants.output_namespaces || [];
const ENDED = new Set(page.constants.ended_statuses); // the engine's: completed, failed, cancelled (not paused)
const $ = (id) => document.getElementById(id);

const model = {
  ready: false,
  lastSeq: page.stream_after,
  status: page.run.status,
  context: {},
  provenance: {},
  flips: [], // every flip so far, with its seq and cause
  sets: [], // context_set changes seen in the stream: { name, seq, value }
  changed: new Set(),
  revision: 0, // bumped when the context, its provenance, flips or sets change (redraw the table)
  execution: {}, // state.execution: current_agent, visited_agents, path (the agents graph)
  spaces: {}, // seed 004's namespaces: { agent: {...}, world: {...} }
  writes: {}, // the server's writes: agent/world path -> { tool, field, seq }
  spacesRevision: 0, // bumped when a namespace changes
  warnings: 0, // execution.warnings: changes the run refused (warning events), for the header
  readiness: null, // the server's hand-off readiness (null: not sent, rules shown without status)
  run: { ...page.run }, // the lifecycle: started_at, ended_at, last_event_at, ended_by
};
const initial = readState(); // the shared view: ?at, ?agent, ?type, ?compare, ?event
// "Compare with #" follows the live end until the reader types another number
let compareFollows = !initial.compare || initial.compare[1] === "live";
// live: follow the stream; otherwise show `state` as of `seq` (from the state API)
let view = { live: true, seq: null, state: null };
let conn = { state: "connecting", detail: {} }; // the socket's last reported state
let viewRevision = 0; // bumped whenever `view` is replaced
function setView(next) {
  view = next;
  viewRevision += 1;
}

const stream = new EventStream({
  list: $("stream"), empty: $("stream-empty"),
  agentSelect: $("filter-agent"), typeSelect: $("filter-type"), pauseButton: $("pause"),
  noMatch: $("stream-nomatch"), capped: $("stream-capped"), types: eventTypes,
  onFilter: ({ agent, type }) => writeState({ agent, type }),
  onSelect: (seq) => writeState({ event: seq }),
});
stream.setFilters(initial);
if (initial.event !== null) {
  stream.highlight(initial.event);
  stream.scrollPending = initial.event;
}

const derivedFlags = Object.entries(page.variables)
  .filter(([, meta]) => meta.category === "derived")
  .map(([name, meta]) => ({ name, initial: meta.default ?? false }));

function jump(seq) {
  // an event no longer in the list: show the list's head, which says where earlier events are
  if (!stream.jumpTo(seq)) $("stream").closest("section").scrollIntoView({ block: "start" });
}

function describeFlip(flip) {
  const cause = flip.cause || {};
  const setter = setBy(cause);
  if (setter) return `set by ${setter} at #${flip.seq}`;
  const by = cause.agent || cause.tool;
  return `flipped at #${flip.seq}${by ? ` by ${by}` : ""}`;
}

function shown() {
  if (view.live) {
    return { seq: model.lastSeq, context: model.context, provenance: model.provenance, flips: model.flips,
      sets: model.sets, execution: model.execution, readiness: model.readiness,
      spaces: model.spaces, writes: model.writes };
  }
  return { seq: view.seq, ...view.state, sets: model.sets.filter((set) => set.seq <= view.seq) };
}

// -- rendering (batched: at most once per frame) -------------------------------------------------
let frame = null;
let graphDrawn = null; // what the agents graph shows now, to skip redrawing an unchanged graph
// the same for the context table and the hand-offs: most events of a fast run change neither
let contextDrawn = null;
let handoffsDrawn = null;
let spacesDrawn = null;
// Coalesced: the panels redraw at most every RENDER_EVERY_MS, so a fast run (1,000 events/s)
// costs a few redraws a second, not one per frame; the event list appends once a frame.
const RENDER_EVERY_MS = 250;
let lastRender = 0;
let renderTimer = null;
function schedule() {
  if (frame !== null || renderTimer !== null) return;
  const wait = lastRender + RENDER_EVERY_MS - performance.now();
  if (wait <= 0) frame = requestAnimationFrame(render);
  else renderTimer = setTimeout(() => { renderTimer = null; frame = requestAnimationFrame(render); }, wait);
}

function render() {
  frame = null;
  lastRender = performance.now();
  if (!model.ready) return;
  const current = shown();
  setText($("run-seq"), String(model.lastSeq));
  setText($("run-warnings-count"), String(model.warnings));
  $("run-warnings").dataset.count = String(model.warnings);
  renderLifecycle();

  const slider = $("travel-seq");
  slider.max = String(model.lastSeq);
  if (view.live) {
    slider.value = String(model.lastSeq);
    setText($("travel-out"), `#${model.lastSeq}`);
  }
  $("compare-b").max = $("compare-a").max = String(model.lastSeq);
  if (compareFollows) $("compare-b").value = String(model.lastSeq);
  // an ended run's latest state is its final one: "live" only while the run can change
  const latest = `${model.run.ended_at ? "final" : "live"} · after #${model.lastSeq}`;
  setText($("context-at"), view.live ? latest : `after #${view.seq}`);

  const contextKey = view.live ? `live ${model.revision}` : `at ${viewRevision}`;
  if (contextKey !== contextDrawn) {
    contextDrawn = contextKey;
    renderContext($("context"), {
      context: current.context, provenance: current.provenance, flips: current.flips, sets: current.sets,
      variables: page.variables, onJump: jump, changed: view.live ? model.changed : null, categories, baseFlags,
    });
  }
  model.changed.clear();

  const flags = derivedFlags.map((flag) => ({
    ...flag,
    changes: [
      ...model.flips.filter((f) => f.name === flag.name)
        .map((f) => ({ seq: f.seq, value: f.value, kind: "flip", label: describeFlip(f) })),
      ...model.sets.filter((s) => s.name === flag.name)
        .map((s) => ({ seq: s.seq, value: s.value, kind: "set", label: `set at #${s.seq}` })),
    ],
  }));
  renderTimeline($("timeline"), { flags, lastSeq: model.lastSeq, cursor: view.live ? null : view.seq, onJump: jump });
  const spacesKey = view.live ? `live ${model.spacesRevision}` : `at ${viewRevision}`;
  if (spacesKey !== spacesDrawn && $("namespaces")) { // the panel: only for a workflow with mappings
    spacesDrawn = spacesKey;
    renderNamespaces($("namespaces"), {
      state: current.spaces || {}, writes: current.writes || {}, namespaces: outputNamespaces,
      mappings: page.outputs, onJump: jump,
    });
  }
  const handoffsKey = JSON.stringify(current.readiness);
  if (handoffsKey !== handoffsDrawn) {
    handoffsDrawn = handoffsKey;
    renderHandoffs($("handoffs"), page.handoffs, current.readiness);
  }
  const execution = current.execution || {};
  const graphKey = JSON.stringify([view.live ? null : view.seq, execution.current_agent,
    execution.visited_agents?.length, execution.path?.length, current.readiness?.map((row) => row.status),
    execution.exchanges?.reduce((turns, pair) => turns + pair.turns, 0)]);
  if (graphKey !== graphDrawn) { // most events change neither the agents nor a rule's status
    graphDrawn = graphKey;
    renderGraph($("graph"), { rules: page.handoffs, readiness: current.readiness, execution, onJump: jump });
  }
  setText($("graph-at"), view.live ? latest : `after #${view.seq}`);
  if (view.live) resolveSoon();
}

function renderLifecycle() {
  const run = { ...model.run, status: model.status };
  const staleAfterS = page.stale_after_s;
  const pill = $("run-status");
  setText(pill, statusLabel(run, staleAfterS));
  const key = statusKey(run, staleAfterS);
  if (pill.dataset.status !== key) pill.dataset.status = key;
  const title = isStale(run, staleAfterS)
    ? `running, but no event for more than ${staleAfterS} s (RUNS_STALE_AFTER_S)` : "";
  if (pill.title !== title) pill.title = title;
  setText($("run-duration"), runDuration(run));
  const last = run.last_event_at;
  setText($("run-last-event"), last && model.lastSeq ? when(last) : "—");
  setText($("run-ended"), run.ended_at ? when(run.ended_at) : "not yet");
  showConn();
}
setInterval(renderLifecycle, 5000); // the duration and the stale marker move with the clock

// -- the socket ----------------------------------------------------------------------------------
let restored = false;
function onSnapshot(message) {
  model.ready = true;
  if (message.run) {
    model.run = { ...model.run, ...message.run,
      last_event_at: message.run.last_event_at || model.run.last_event_at };
  }
  model.lastSeq = message.seq;
  model.revision += 1;
  model.context = message.state.context;
  model.provenance = message.provenance;
  model.flips = message.flips || [];
  model.sets = model.sets.filter((set) => set.seq <= message.seq);
  model.status = message.state.execution.status;
  model.execution = message.state.execution;
  model.warnings = message.state.execution.warnings || 0;
  model.readiness = message.handoffs ?? null;
  model.spaces = Object.fromEntries(outputNamespaces.map((name) => [name, message.state[name] || {}]));
  model.writes = message.writes || {};
  model.spacesRevision += 1;
  schedule();
  restoreOnce();
}

/** Show the view the URL names, once the page has caught up to the run as it was rendered
 * (the first snapshot is the state at the stream window's start, not the live end). */
function restoreOnce() {
  if (restored || model.lastSeq < page.run.event_count) return;
  restored = true;
  if (initial.compare) {
    const [a, b] = initial.compare;
    $("compare-a").value = String(a);
    $("compare-b").value = String(b === "live" ? model.lastSeq : b);
    compare();
  }
  if (initial.at !== null && initial.at < model.lastSeq) {
    $("travel-seq").value = String(initial.at);
    $("travel-out").textContent = `#${initial.at}`;
    travelTo(initial.at);
  }
}

/** Count a turn of `target` speaking after `source`, as the server's state does
 * (runs.engine.state: execution.exchanges; the graph connects speakers with no hand-off between). */
function exchange(execution, source, target) {
  if (!source || source === target) return;
  execution.exchanges = execution.exchanges || [];
  const known = execution.exchanges.find((pair) => pair.source === source && pair.target === target);
  if (known) known.turns += 1;
  else execution.exchanges.push({ source, target, turns: 1 });
}

/** Follow the agents between snapshots: who spoke last, and each hand-off edge as it is taken. */
function followAgents(message) {
  const { event, seq } = message;
  const execution = model.execution;
  const visit = (agent) => {
    execution.current_agent = agent;
    execution.visited_agents = execution.visited_agents || [];
    if (!execution.visited_agents.includes(agent)) execution.visited_agents.push(agent);
  };
  const agent = senderOf(message);
  if (event.type === "agent_text" && agent) {
    exchange(execution, execution.current_agent, agent);
    visit(agent);
  }
  if (event.type === "handoff" && typeof event.target === "string") {
    execution.path = [...(execution.path || []),
      { source: agent, target: event.target, rule: Number.isInteger(event.rule) ? event.rule : null, seq }];
    visit(event.target);
  }
}

function onEvent(message) {
  model.lastSeq = message.seq;
  const flipped = new Set();
  for (const flip of message.flips || []) {
    model.flips.push(flip);
    flipped.add(flip.name);
  }
  if (message.flips?.length) model.revision += 1;
  for (const [name, change] of Object.entries(message.changes || {})) {
    model.revision += 1;
    model.context[name] = change.new;
    model.changed.add(name);
    if (!flipped.has(name)) model.sets.push({ name, seq: message.seq, value: change.new });
  }
  // An event the server's summary already counted (the page's, or the snapshot's) keeps the
  // run's stored last event time; a newer one arrived just now.
  if (message.seq > (model.run.event_count || 0)) {
    model.run.last_event_at = new Date().toISOString();
    model.run.event_count = message.seq;
  }
  if (message.event.type === "warning") model.warnings += 1;
  if (message.event.type === "run_status") {
    const status = message.event.status;
    model.status = status;
    const ended = ENDED.has(status); // paused is not ended: it resumes to running
    if (ended && !model.run.ended_at) model.run.ended_at = model.run.last_event_at;
    model.run.ended_by = !ended ? null : status === "failed" ? "crash" : status;
  }
  for (const write of message.outputs || []) { // what the tool's output mappings wrote
    if (!write.written) continue;
    writeAt(model.spaces, write.to, write.new);
    model.writes[write.to] = { tool: write.tool, field: write.field, seq: message.seq };
    model.spacesRevision += 1;
  }
  model.readiness = message.handoffs ?? null;
  followAgents(message);
  stream.add(message);
  schedule();
  restoreOnce();
}

// The header's warning count filters the events list to the warnings.
$("run-warnings-link").addEventListener("click", (event) => {
  event.preventDefault();
  stream.setFilters({ agent: "", type: "warning" });
  writeState({ agent: "", type: "warning" });
  $("stream").closest("section").scrollIntoView({ block: "start" });
});

/** The connection pill: "live" only while the run can still change; an ended run says so. */
function showConn() {
  const ended = conn.state === "live" && model.run.ended_at;
  showStatus($("conn"), ended ? "ended" : conn.state, conn.detail);
}

const socket = new LiveSocket(root.dataset.wsPath, {
  sequenced: true,
  after: page.stream_after,
  onStatus(state, detail) {
    conn = { state, detail };
    showConn();
  },
  onMessage(message) {
    if (message.type === "snapshot") onSnapshot(message);
    else if (message.type === "event") onEvent(message);
    else if (message.type === "error") $("conn").title = message.error;
  },
}).start();

// -- time travel ---------------------------------------------------------------------------------
let travelToken = 0;

function goLive() {
  travelToken += 1;
  setView({ live: true, seq: null, state: null });
  writeState({ at: null });
  $("travel-live").setAttribute("aria-pressed", "true");
  $("travel-note").hidden = true;
  schedule();
}

async function travelTo(seq) {
  if (seq >= model.lastSeq) {
    goLive();
    return;
  }
  const token = ++travelToken;
  $("travel-live").setAttribute("aria-pressed", "false");
  writeState({ at: seq });
  try {
    const data = await getJSON(urls.state, { at: seq });
    if (token !== travelToken) return; // a newer request superseded this one
    setView({
      live: false,
      seq: data.seq,
      state: {
        context: data.state.context, provenance: data.provenance, flips: data.flips,
        execution: data.state.execution, readiness: data.handoffs ?? null,
        spaces: Object.fromEntries(outputNamespaces.map((name) => [name, data.state[name] || {}])),
        writes: data.writes || {},
      },
    });
    replace($("travel-note"), `Showing the state after event #${data.seq} of ${model.lastSeq}. The event stream stays live. `,
      el("button", { type: "button", class: "link-button", onclick: goLive }, "Back to live"));
    $("travel-note").hidden = false;
    schedule();
    resolveSoon();
  } catch (error) {
    replace($("travel-note"), el("span", { class: "error" }, `Could not load #${seq}: ${error.message}`));
    $("travel-note").hidden = false;
  }
}

const travelSoon = debounce((seq) => travelTo(seq), 150);
$("travel-seq").addEventListener("input", (event) => {
  const seq = Number(event.target.value);
  $("travel-out").textContent = `#${seq}`;
  travelSoon(seq);
});
$("travel-live").addEventListener("click", goLive);

$("compare-b").addEventListener("input", () => {
  compareFollows = Number($("compare-b").value) === model.lastSeq;
});
$("compare").addEventListener("submit", (event) => {
  event.preventDefault();
  compare();
});

async function compare() {
  const clamp = (value) => Math.max(0, Math.min(model.lastSeq, Number(value) || 0));
  const [a, b] = [clamp($("compare-a").value), clamp($("compare-b").value)].sort((x, y) => x - y);
  writeState({ compare: [a, compareFollows && b === model.lastSeq ? "live" : b] });
  try {
    const [first, second] = await Promise.all([getJSON(urls.state, { at: a }), getJSON(urls.state, { at: b })]);
    renderDiff($("compare-result"), first, second, { onJump: jump, namespaces });
  } catch (error) {
    replace($("compare-result"), el("p", { class: "error" }, `Compare failed: ${error.message}`));
    $("compare-result").hidden = false;
  }
}

// -- template preview ----------------------------------------------------------------------------
const PATTERNS = { ref: /\{\{\s*([^{}]+?)\s*\}\}/g, system: /\{([^{}]*)\}/g };
let resolveToken = 0;

function highlight(text, unresolved, syntax) {
  const missing = new Set(unresolved);
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(PATTERNS[syntax])) {
    const key = syntax === "ref" ? match[1].trim() : match[1];
    if (!missing.has(key)) continue;
    parts.push(text.slice(last, match.index), el("mark", { class: "unresolved", title: "unresolved" }, match[0]));
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

async function resolveTemplate() {
  const template = $("template-input").value;
  const token = ++resolveToken;
  if (!template) {
    replace($("template-output"));
    replace($("template-unresolved"));
    $("template-at").textContent = "";
    return;
  }
  try {
    const data = await getJSON(urls.resolve, {
      template, syntax: $("template-syntax").value, at: view.live ? null : view.seq,
    });
    if (token !== resolveToken) return;
    $("template-output").classList.remove("error");
    replace($("template-output"), highlight(data.text, data.unresolved, data.syntax));
    replace($("template-unresolved"), data.unresolved.length
      ? ["Unresolved: ", data.unresolved.map((ref, index) => [index ? ", " : "", el("code", {}, ref)])]
      : el("span", { class: "ok" }, "Every reference resolved."));
    $("template-at").textContent = `resolved against the state after #${data.seq} (${data.syntax === "ref" ? "{{ref}}" : "{name}"})`;
  } catch (error) {
    if (token !== resolveToken) return;
    $("template-output").classList.add("error");
    replace($("template-output"), error.message);
    replace($("template-unresolved"));
  }
}

const resolveSoon = debounce(resolveTemplate, 250);
$("template-input").addEventListener("input", resolveSoon);
$("template-syntax").addEventListener("change", resolveTemplate);

window.inspector = { socket, stream, model, view: () => view, travelTo, goLive, lastActivity };
