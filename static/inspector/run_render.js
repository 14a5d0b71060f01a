// The run page's panels: the header, context table, flag timeline, namespaces, hand-offs and
// agents graph, drawn from the model (live) or from the state time travel loaded. Redraws are
// batched and skip a panel whose input did not change.

import { renderContext, setBy } from "./context.js";
import { setText, when } from "./dom.js";
import { renderGraph } from "./graph.js";
import { renderHandoffs } from "./handoffs.js";
import { isStale, runDuration, statusKey, statusLabel } from "./lifecycle.js";
import { renderNamespaces } from "./namespaces.js";
import { showStatus } from "./socket.js";
import { renderTimeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
// Coalesced: the panels redraw at most every RENDER_EVERY_MS, so a fast run (1,000 events/s)
// costs a few redraws a second, not one per frame; the event list appends once a frame.
const RENDER_EVERY_MS = 250;

function describeFlip(flip) {
  const cause = flip.cause || {};
  const setter = setBy(cause);
  if (setter) return `set by ${setter} at #${flip.seq}`;
  const by = cause.agent || cause.tool;
  return `flipped at #${flip.seq}${by ? ` by ${by}` : ""}`;
}

/** The panels of one run page. `conn()` is the socket's last reported state; `afterRender()`
 * runs after each redraw (the time-travel inputs, the template preview). */
export function runPanels({ page, model, view, jump, conn, afterRender }) {
  const { categories, base_flags: baseFlags } = page.constants;
  const outputNamespaces = page.constants.output_namespaces || [];
  const derivedFlags = Object.entries(page.variables)
    .filter(([, meta]) => meta.category === "derived")
    .map(([name, meta]) => ({ name, initial: meta.default ?? false }));
  // what each panel shows now, to skip redrawing an unchanged one: most events of a fast run
  // change neither the context table, the hand-offs nor the agents graph
  const drawn = { context: null, handoffs: null, spaces: null, graph: null };
  let frame = null;
  let lastRender = 0;
  let renderTimer = null;

  function shown() {
    if (view.live) {
      return { seq: model.lastSeq, context: model.context, provenance: model.provenance, flips: model.flips,
        sets: model.sets, execution: model.execution, resumes: model.resumes, readiness: model.readiness,
        spaces: model.spaces, writes: model.writes };
    }
    return { seq: view.seq, ...view.state, sets: model.sets.filter((set) => set.seq <= view.seq) };
  }

  /** Redraw soon: at the next frame past RENDER_EVERY_MS since the last, or with `now` at the
   * next frame whatever the last (the page's first draw of a caught-up run). */
  function schedule({ now = false } = {}) {
    if (now && renderTimer !== null) {
      clearTimeout(renderTimer);
      renderTimer = null;
    }
    if (now && frame === null) {
      frame = requestAnimationFrame(render);
      return;
    }
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
    // an ended run's latest state is its final one: "live" only while the run can change and
    // the socket brings its events (disconnected, the panels show what was last heard)
    const liveNow = model.run.ended_at ? "final" : conn().state === "live" ? "live" : "not live";
    const latest = `${liveNow} · after #${model.lastSeq}`;
    setText($("context-at"), view.live ? latest : `after #${view.seq}`);

    const contextKey = view.live ? `live ${model.revision}` : `at ${view.revision}`;
    if (contextKey !== drawn.context) {
      drawn.context = contextKey;
      renderContext($("context"), {
        context: current.context, provenance: current.provenance, flips: current.flips, sets: current.sets,
        variables: page.variables, onJump: jump, changed: view.live ? model.changed : null, categories, baseFlags,
      });
    }
    model.changed.clear();

    // one pass over the run's flips (a long run has thousands), not one per flag
    const changesOf = new Map(derivedFlags.map((flag) => [flag.name, []]));
    for (const f of model.flips) {
      changesOf.get(f.name)?.push({ seq: f.seq, value: f.value, kind: "flip", label: describeFlip(f) });
    }
    for (const s of model.sets) {
      changesOf.get(s.name)?.push({ seq: s.seq, value: s.value, kind: "set", label: `set at #${s.seq}` });
    }
    const flags = derivedFlags.map((flag) => ({ ...flag, changes: changesOf.get(flag.name) }));
    renderTimeline($("timeline"), { flags, lastSeq: model.lastSeq, cursor: view.live ? null : view.seq, onJump: jump });
    const spacesKey = view.live ? `live ${model.spacesRevision}` : `at ${view.revision}`;
    if (spacesKey !== drawn.spaces && $("namespaces")) { // the panel: only for a workflow with mappings
      drawn.spaces = spacesKey;
      renderNamespaces($("namespaces"), {
        state: current.spaces || {}, writes: current.writes || {}, namespaces: outputNamespaces,
        mappings: page.outputs, onJump: jump,
      });
    }
    const handoffsKey = JSON.stringify(current.readiness);
    if (handoffsKey !== drawn.handoffs) {
      drawn.handoffs = handoffsKey;
      renderHandoffs($("handoffs"), page.handoffs, current.readiness);
    }
    const execution = current.execution || {};
    const graphKey = JSON.stringify([view.live ? null : view.seq, execution.current_agent,
      // the path's last seq, not its length: the state keeps the latest hand-offs only
      execution.visited_agents?.length, execution.path?.at(-1)?.seq, current.readiness?.map((row) => row.status),
      execution.exchanges?.reduce((turns, pair) => turns + pair.turns, 0), current.resumes?.length]);
    if (graphKey !== drawn.graph) { // most events change neither the agents nor a rule's status
      drawn.graph = graphKey;
      renderGraph($("graph"), {
        rules: page.handoffs, readiness: current.readiness, execution, resumes: current.resumes || [],
        pathMax: page.constants.path_max_edges, onJump: jump,
      });
    }
    setText($("graph-at"), view.live ? latest : `after #${view.seq}`);
    afterRender();
  }

  /** The connection pill: "live" only while the run can still change; an ended run says so. */
  function showConn() {
    const { state, detail } = conn();
    showStatus($("conn"), state === "live" && model.run.ended_at ? "ended" : state, detail);
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
  return { schedule, showConn };
}
