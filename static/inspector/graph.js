// The agents graph: the agents as nodes, the workflow's hand-off rules as edges labelled with
// their conditions, the edges taken so far (state.execution.path) highlighted and the current
// agent marked. SVG built with createElementNS/textContent; the layout is deterministic: one row
// per rank (longest path along the rules, back edges aside), at most PER_ROW agents a row (more
// for many agents); edge labels are placed apart (graph_labels.js).

import { el, replace, setText, svg } from "./dom.js";
import { placeLabels } from "./graph_labels.js";
import { pathCount, pathTaken } from "./path_resumes.js";

const COLUMN = 190; // the width each node of the widest row gets
const NODE_W = 160;
const NODE_H = 34;
const ROW_GAP = 104; // from one row's centre to the next
const MARGIN = 30;
const PER_ROW = 3; // up to FEW_AGENTS agents; more: more a row (at most MAX_PER_ROW), fewer rows
const FEW_AGENTS = 12;
const MAX_PER_ROW = 6;
const NAME_CHARS = 22; // a line of a node's name; a longer name takes two lines, then is cut (…)
const LABEL_CHARS = 28;
const LABEL_H = 18;
const CHAR_W = 6.6; // the labels' monospace advance at 11px, so their width is known up front
const MIN_SCALE = 0.75; // a wide graph is shrunk to its panel down to this, then scrolls sideways
const BEND = 40;
const SUMMARY_EDGES = 10; // the line under the graph lists at most the last ten hand-offs

function clip(text, max) {
  const value = String(text ?? "");
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

/** Every agent to draw, in a stable order: the rules' agents, then the ones seen in the run. */
export function agentsOf(rules, execution = {}) {
  const agents = new Set();
  const add = (name) => {
    if (typeof name === "string" && name) agents.add(name);
  };
  for (const rule of rules) { add(rule.source_agent); add(rule.target_agent); }
  for (const name of execution.visited_agents || []) add(name);
  for (const edge of execution.path || []) { add(edge.source); add(edge.target); }
  for (const pair of execution.exchanges || []) { add(pair.source); add(pair.target); }
  add(execution.current_agent);
  return [...agents];
}

/** Place each agent: { places: name -> { x, y, row, rank }, width, height } of the drawing. */
export function layout(agents, rules) {
  const next = new Map(agents.map((name) => [name, []]));
  for (const rule of rules) next.get(rule.source_agent)?.push(rule.target_agent);
  const named = new Set(rules.flatMap((rule) => [rule.source_agent, rule.target_agent]));
  const ruled = agents.filter((name) => named.has(name));
  const entered = new Set(rules.filter((r) => r.source_agent !== r.target_agent).map((r) => r.target_agent));
  // Depth-first in rule order from the agents no rule hands to (then any closed cycle): an edge
  // back to an agent still on the walk is a back edge and does not rank; the others rank their
  // target below their source (longest path), so a chain of rules reads top to bottom.
  const walking = new Set();
  const order = []; // preorder: the order of agents within a rank
  const seen = new Set();
  const finished = []; // postorder, reversed below into a topological order of the forward edges
  const forward = new Map(ruled.map((name) => [name, []]));
  const visit = (name) => {
    walking.add(name);
    seen.add(name);
    order.push(name);
    for (const target of next.get(name)) {
      if (walking.has(target)) continue;
      forward.get(name).push(target);
      if (!seen.has(target)) visit(target);
    }
    walking.delete(name);
    finished.push(name);
  };
  for (const root of [...ruled.filter((name) => !entered.has(name)), ...ruled]) {
    if (!seen.has(root)) visit(root);
  }
  const rank = new Map(ruled.map((name) => [name, 0]));
  for (const name of finished.reverse()) {
    for (const target of forward.get(name)) rank.set(target, Math.max(rank.get(target), rank.get(name) + 1));
  }
  const last = Math.max(-1, ...rank.values());
  for (const name of agents) {
    if (!rank.has(name)) { rank.set(name, last + 1); order.push(name); } // seen, but in no rule
  }
  const rows = [];
  const byRank = new Map();
  for (const name of order) {
    if (!byRank.has(rank.get(name))) byRank.set(rank.get(name), []);
    byRank.get(rank.get(name)).push(name);
  }
  // many agents: more a row, so the drawing grows in both directions, not only down
  const perRow = agents.length <= FEW_AGENTS ? PER_ROW : Math.min(MAX_PER_ROW, Math.ceil(Math.sqrt(agents.length)));
  for (const key of [...byRank.keys()].sort((a, b) => a - b)) {
    const members = byRank.get(key);
    for (let i = 0; i < members.length; i += perRow) rows.push(members.slice(i, i + perRow));
  }
  const width = COLUMN * Math.max(2, ...rows.map((row) => row.length));
  const places = new Map();
  rows.forEach((row, index) => {
    row.forEach((name, column) => {
      places.set(name, {
        x: (width * (column + 0.5)) / row.length,
        y: MARGIN + NODE_H / 2 + index * ROW_GAP,
        row: index,
        rank: rank.get(name),
      });
    });
  });
  const height = MARGIN * 2 + NODE_H + Math.max(0, rows.length - 1) * ROW_GAP;
  return { places, width, height };
}

/** Match each taken edge of the path to its rule (by index, else by its agents); the rest stay apart. */
export function takenEdges(rules, path = []) {
  const firstRule = new Map();
  rules.forEach((rule, index) => {
    const key = JSON.stringify([rule.source_agent, rule.target_agent]);
    if (!firstRule.has(key)) firstRule.set(key, index);
  });
  const byRule = new Map();
  const unplanned = new Map();
  for (const edge of path) {
    let index = Number.isInteger(edge.rule) && rules[edge.rule]
      && rules[edge.rule].source_agent === edge.source && rules[edge.rule].target_agent === edge.target
      ? edge.rule : -1;
    const key = JSON.stringify([edge.source, edge.target]);
    if (index < 0) index = firstRule.get(key) ?? -1;
    if (index >= 0) {
      if (!byRule.has(index)) byRule.set(index, []);
      byRule.get(index).push(edge.seq);
    } else {
      if (!unplanned.has(key)) unplanned.set(key, { source: edge.source, target: edge.target, seqs: [] });
      unplanned.get(key).seqs.push(edge.seq);
    }
  }
  return { byRule, unplanned: [...unplanned.values()] };
}

/** The turns between two speakers that no rule or taken hand-off connects (the user and the
 * agent it answers, say): one undirected edge per pair, with the turns both ways. */
export function exchangeEdges(rules, execution = {}) {
  const pair = (a, b) => JSON.stringify([a, b].sort());
  const linked = new Set([
    ...rules.map((rule) => pair(rule.source_agent, rule.target_agent)),
    ...(execution.path || []).map((edge) => pair(edge.source, edge.target)),
  ]);
  const edges = new Map();
  for (const { source, target, turns } of execution.exchanges || []) {
    const key = pair(source, target);
    if (linked.has(key)) continue;
    if (!edges.has(key)) edges.set(key, { source, target, turns: 0 });
    edges.get(key).turns += turns;
  }
  return [...edges.values()];
}

function boundary(center, toward) {
  const dx = toward.x - center.x;
  const dy = toward.y - center.y;
  if (!dx && !dy) return { x: center.x, y: center.y };
  const scale = Math.min(dx ? (NODE_W / 2 + 2) / Math.abs(dx) : Infinity, dy ? (NODE_H / 2 + 2) / Math.abs(dy) : Infinity);
  return { x: center.x + dx * scale, y: center.y + dy * scale };
}

function geometry(a, b, bend) {
  if (a === b) { // a rule from an agent to itself: a loop on its right side
    const x = a.x + NODE_W / 2;
    const label = { x: x + 44, y: a.y };
    return {
      d: `M ${x} ${a.y - 8} C ${x + 56} ${a.y - 40}, ${x + 56} ${a.y + 40}, ${x} ${a.y + 8}`,
      at: () => label,
      xs: [x, x + 42],
      curve: [0.2, 0.35, 0.5, 0.65, 0.8].map((t) => ({ x: x + 42 * Math.sin(Math.PI * t), y: a.y - 24 + 48 * t })),
      loop: true,
    };
  }
  const length = Math.hypot(b.x - a.x, b.y - a.y);
  const normal = { x: -(b.y - a.y) / length, y: (b.x - a.x) / length };
  const control = {
    x: (a.x + b.x) / 2 + normal.x * bend * 2,
    y: (a.y + b.y) / 2 + normal.y * bend * 2,
  };
  const start = boundary(a, control);
  const end = boundary(b, control);
  const point = (t, p, q, r) => (1 - t) ** 2 * p + 2 * (1 - t) * t * q + t ** 2 * r;
  const at = (t) => ({ x: point(t, start.x, control.x, end.x), y: point(t, start.y, control.y, end.y) });
  const steps = Math.min(200, Math.ceil((length + Math.abs(bend) * 2) / 10)); // a point every ~10 units
  return {
    d: `M ${start.x.toFixed(1)} ${start.y.toFixed(1)} Q ${control.x.toFixed(1)} ${control.y.toFixed(1)} ${end.x.toFixed(1)} ${end.y.toFixed(1)}`,
    at,
    xs: [0, 0.25, 0.5, 0.75, 1].map((t) => at(t).x), // to size the drawing
    curve: Array.from({ length: steps + 1 }, (_, i) => at(i / steps)), // what other labels keep off
    loop: false,
  };
}

/** How far each edge curves: straight to the next rank, apart when they would overlap. */
function bends(edges, places, width) {
  const keys = new Set(edges.map((edge) => JSON.stringify([edge.source, edge.target])));
  const pairs = new Map();
  const outs = new Map();
  return edges.map((edge) => {
    const a = places.get(edge.source);
    const b = places.get(edge.target);
    const key = JSON.stringify([edge.source, edge.target]);
    const paired = keys.has(JSON.stringify([edge.target, edge.source]));
    const parallel = pairs.get(key) || 0;
    pairs.set(key, parallel + 1);
    const out = outs.get(edge.source) || 0;
    outs.set(edge.source, out + 1);
    const span = Math.abs(b.row - a.row);
    const straight = b.row === a.row + 1 && !paired;
    // an edge across rows passes the agents in between: curve it wide enough to clear them,
    // out towards the nearer side of the drawing (a pair A→B, B→A curves apart by itself)
    let base = straight ? 0 : BEND + Math.min(2, Math.max(0, span - 1)) * (NODE_W / 2 + 10);
    if (span >= 2 && !paired) {
      const normalX = -(b.y - a.y); // the sign of the curve's sideways direction for a positive bend
      const outward = (a.x + b.x) / 2 > width / 2 ? 1 : -1;
      base *= Math.sign(normalX) === outward ? 1 : -1;
    }
    const step = parallel === 0 ? 0 : (parallel % 2 ? 1 : -1) * Math.ceil(parallel / 2) * BEND;
    if (span >= 2) { // the label sits at the curve's apex, beside the agents it passes, not on them
      return { bend: base + step, labelAt: 0.5, side: Math.sign(-(b.y - a.y) * (base + step)) };
    }
    return { bend: base + step, labelAt: [0.5, 0.64, 0.36][out % 3], side: 0 }; // fanned-out labels stagger
  });
}

function edgeTitle(edge) {
  if (edge.turns !== undefined) {
    return `${edge.source} ↔ ${edge.target} · spoke in turn ${edge.turns} time${edge.turns === 1 ? "" : "s"} (no hand-off)`;
  }
  const parts = [`${edge.source} → ${edge.target}`];
  if (edge.condition) parts.push(`when ${edge.condition}`);
  if (edge.status) parts.push(edge.status === "never" ? `never in this environment${edge.reason ? ` (${edge.reason})` : ""}` : edge.status);
  parts.push(edge.seqs.length ? `taken at ${edge.seqs.map((seq) => `#${seq}`).join(", ")}` : "not taken yet");
  return parts.join(" · ");
}

/** What an edge's label says, and the label to place: its box at any point of its curve. */
function edgeLabel(edge, places, shape) {
  const geom = geometry(places.get(edge.source), places.get(edge.target), shape.bend);
  const taken = edge.seqs.length > 0;
  const text = edge.turns !== undefined ? `${edge.turns} turn${edge.turns === 1 ? "" : "s"}`
    : edge.rule === null ? "no rule" : clip(edge.condition, LABEL_CHARS);
  const shown = taken && edge.seqs.length > 1 ? `${text} ×${edge.seqs.length}` : text;
  const width = shown.length * CHAR_W + 8;
  const box = (point, side = shape.side) => ({ // side: right of the point (1), left (-1), centred (0)
    x: side > 0 ? point.x + 3 : side < 0 ? point.x - width - 3 : point.x - width / 2,
    y: point.y - LABEL_H / 2, width, height: LABEL_H,
  });
  return { geom, shown, labelAt: shape.labelAt, side: shape.side, at: geom.at, box, curve: geom.curve, loop: geom.loop };
}

function drawEdge(edge, label, place, onJump) {
  const { geom, shown } = label;
  const taken = edge.seqs.length > 0;
  const exchange = edge.turns !== undefined; // speakers in conversation: no direction, no rule
  const jump = () => onJump?.(edge.seqs.at(-1));
  return svg("g", {
    ...(taken ? { // a taken edge links to the event that last took it, as the timeline's marks do
      tabindex: "0", role: "link", "aria-label": edgeTitle(edge), onclick: jump,
      onkeydown: (event) => { if (event.key === "Enter") jump(); },
    } : {}),
    class: ["edge", taken && "taken", exchange && "exchange", edge.rule === null && !exchange && "unplanned", edge.status && `ready-${edge.status.replace(" ", "-")}`],
    dataset: {
      rule: edge.rule === null ? "" : String(edge.rule), source: edge.source, target: edge.target,
      taken: String(taken), status: edge.status || "", seqs: edge.seqs.join(","),
    },
  },
  svg("title", {}, edgeTitle(edge)),
  svg("path", { d: geom.d, class: "edge-line", "marker-end": exchange ? null : `url(#${taken ? "graph-arrow-taken" : "graph-arrow"})` }),
  svg("rect", { x: place.x, y: place.y, width: place.width, height: place.height, rx: 4, class: "edge-label-bg" }),
  svg("text", { x: place.x + place.width / 2, y: place.y + LABEL_H / 2 + 4, class: "edge-label", "text-anchor": "middle" }, shown));
}

/** A node's name in at most two lines of NAME_CHARS, broken after a separator or before a capital
 * where it can be; a name longer still is cut with "…" (its title and accessible name hold all of it). */
export function nameLines(name) {
  if (name.length <= NAME_CHARS) return [name];
  let cut = NAME_CHARS;
  for (let i = NAME_CHARS; i >= NAME_CHARS / 2; i -= 1) {
    if (/[\s_.:/-]/.test(name[i - 1]) || (/[A-Z]/.test(name[i]) && /[a-z0-9]/.test(name[i - 1]))) {
      cut = i;
      break;
    }
  }
  return [name.slice(0, cut).trimEnd(), clip(name.slice(cut).trimStart(), NAME_CHARS)];
}

function drawNode(name, place, execution) {
  const current = execution.current_agent === name;
  const visited = (execution.visited_agents || []).includes(name);
  const x = place.x - NODE_W / 2;
  const y = place.y - NODE_H / 2;
  const lines = nameLines(name);
  const described = `${name}${current ? " (current agent)" : visited ? " (visited)" : ""}`;
  return svg("g", {
    class: ["node", visited && "visited", current && "current"], role: "img", "aria-label": described,
    dataset: { agent: name, current: String(current), visited: String(visited), cut: String(lines.join("") !== name) },
    "aria-current": current ? "true" : null,
  },
  svg("title", {}, described),
  current ? svg("rect", { x: x - 5, y: y - 5, width: NODE_W + 10, height: NODE_H + 10, rx: 12, class: "node-halo" }) : null,
  svg("rect", { x, y, width: NODE_W, height: NODE_H, rx: 8, class: "node-box" }),
  svg("text", { x: place.x, y: place.y + (lines.length > 1 ? -2.5 : 4), "text-anchor": "middle", class: ["node-name", lines.length > 1 && "two-lines"] },
    lines.map((line, i) => svg("tspan", { x: place.x, dy: i ? 12.5 : null }, line))));
}

/**
 * Draw the graph.
 * rules: the run's pinned hand-off rules; readiness: the server's per-rule list (or null);
 * execution: state.execution (current_agent, visited_agents, path) as of the shown seq;
 * resumes: the server's `resumes` as of it (marked on the path); pathMax: the engine's PATH_MAX_EDGES;
 * onJump(seq): show an event in the stream (a taken edge links to the event that took it).
 */
export function renderGraph(container, { rules, readiness, execution, resumes, pathMax, onJump }) {
  const state = execution || {};
  const agents = agentsOf(rules, state);
  if (!agents.length) {
    replace(container, el("p", { class: "muted" }, "No agents yet: the workflow declares no hand-off rules and no agent has spoken."));
    return;
  }
  const { places, width, height } = layout(agents, rules);
  const { byRule, unplanned } = takenEdges(rules, state.path || []);
  const statuses = new Map((readiness || []).map((row) => [row.index, row]));
  const edges = [
    ...rules.map((rule, index) => ({
      rule: index, source: rule.source_agent, target: rule.target_agent, condition: rule.condition,
      status: statuses.get(index)?.status || null, reason: statuses.get(index)?.reason || null,
      seqs: byRule.get(index) || [],
    })),
    ...unplanned.map((edge) => ({ ...edge, rule: null, condition: null, status: null, reason: null })),
    ...exchangeEdges(rules, state).map((edge) => ({ ...edge, rule: null, condition: null, status: null, reason: null, seqs: [] })),
  ];
  const shapes = bends(edges, places, width);
  const labels = edges.map((edge, index) => edgeLabel(edge, places, shapes[index]));
  // the taken edges claim their labels' places first, then the rules in order, then the rest
  const order = edges.map((_, index) => index).sort((a, b) => Number(!edges[a].seqs.length) - Number(!edges[b].seqs.length));
  const nodeBoxes = agents.map((name) => {
    const place = places.get(name);
    return { x: place.x - NODE_W / 2 - 5, y: place.y - NODE_H / 2 - 5, width: NODE_W + 10, height: NODE_H + 10 };
  });
  const boxes = new Array(edges.length);
  placeLabels(order.map((index) => labels[index]), nodeBoxes).forEach((box, i) => { boxes[order[i]] = box; });
  const drawn = edges.map((edge, index) => ({ edge, node: drawEdge(edge, labels[index], boxes[index], onJump) }));
  const left = Math.floor(Math.min(0, ...labels.flatMap((label) => label.geom.xs), ...boxes.map((box) => box.x))) - 10;
  const right = Math.ceil(Math.max(width, ...labels.flatMap((label) => label.geom.xs),
    ...boxes.map((box) => box.x + box.width))) + 10;
  const top = Math.floor(Math.min(0, ...boxes.map((box) => box.y - 4)));
  const bottom = Math.ceil(Math.max(height, ...boxes.map((box) => box.y + box.height + 4)));
  const marker = (id) => svg("marker", {
    id, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "10", markerHeight: "10",
    markerUnits: "userSpaceOnUse", orient: "auto",
  }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: id }));
  const path = state.path || [];
  const summary = [
    state.current_agent ? ["Current agent: ", el("strong", { class: "graph-current" }, state.current_agent)] : "No current agent yet",
    ` · ${pathCount(path, pathMax)}`,
    pathTaken(path, resumes, SUMMARY_EDGES),
  ];
  const natural = right - left;
  const scroller = el("div", { class: "graph-scroll" },
    svg("svg", {
      viewBox: `${left} ${top} ${natural} ${bottom - top}`, class: "graph-svg", role: "group",
      width: natural, height: bottom - top, // natural size; CSS shrinks it to the panel, down to MIN_SCALE
      style: `min-width: ${Math.round(natural * MIN_SCALE)}px`,
      "aria-label": `Agents graph: ${agents.length} agents, ${rules.length} hand-off rules, ${path.length} taken`,
    },
    svg("defs", {}, marker("graph-arrow"), marker("graph-arrow-taken")),
    // the agents first, so no line hides one; then the untaken edges, then the taken
    agents.map((name) => drawNode(name, places.get(name), state)),
    drawn.filter(({ edge }) => !edge.seqs.length).map(({ node }) => node),
    drawn.filter(({ edge }) => edge.seqs.length).map(({ node }) => node)));
  const previous = views.get(container);
  const kept = previous && previous.current === state.current_agent && previous.scroller.isConnected
    ? { left: previous.scroller.scrollLeft, top: previous.scroller.scrollTop } : null;
  replace(container, scroller,
    el("p", { class: "graph-summary" }, summary),
    el("p", { class: "graph-legend muted" },
      el("span", { class: "legend legend-taken" }, "taken"), " ",
      el("span", { class: "legend legend-rule" }, "rule"), " ",
      el("span", { class: "legend legend-ready" }, "holds now"), " ",
      el("span", { class: "legend legend-never" }, "never in this environment"), " ",
      el("span", { class: "legend legend-exchange" }, "turns (no hand-off)"), " ",
      el("span", { class: "legend legend-current" }, "current agent")));
  // a graph larger than its box (a narrow screen, many agents) scrolls inside it: keep where the
  // reader scrolled while the current agent stays; else show the current agent (or the first)
  const focus = places.get(state.current_agent) || places.get(agents[0]);
  if (kept) {
    scroller.scrollLeft = kept.left;
    scroller.scrollTop = kept.top;
  } else if (focus && (scroller.scrollWidth > scroller.clientWidth || scroller.scrollHeight > scroller.clientHeight)) {
    const scale = scroller.firstElementChild.getBoundingClientRect().width / natural;
    scroller.scrollLeft = (focus.x - left) * scale - scroller.clientWidth / 2;
    scroller.scrollTop = (focus.y - top) * scale - scroller.clientHeight / 2;
  }
  const hint = el("p", { class: "graph-scroll-hint muted", hidden: "" });
  scroller.after(hint);
  // whenever the graph is larger than its box (a phone, a turned screen, many agents), say so and
  // let the keyboard scroll it: what is out of the box is scrolled, not cut
  previous?.watch.disconnect();
  const watch = new ResizeObserver(() => {
    const wide = scroller.scrollWidth > scroller.clientWidth;
    const tall = scroller.scrollHeight > scroller.clientHeight;
    scroller.classList.toggle("graph-wide", wide || tall);
    hint.hidden = !wide && !tall;
    const [what, how] = wide && tall ? ["larger than its box", "scroll it"]
      : wide ? ["wider than the screen", "scroll sideways"] : ["taller than its box", "scroll down"];
    setText(hint, `${what[0].toUpperCase()}${what.slice(1)}: ${how} to see all of it.`);
    if (wide || tall) {
      scroller.tabIndex = 0;
      scroller.setAttribute("aria-label", `Agents graph, ${what}: ${how}`);
    } else {
      scroller.removeAttribute("tabindex");
      scroller.removeAttribute("aria-label");
    }
  });
  watch.observe(scroller);
  views.set(container, { watch, scroller, current: state.current_agent });
}

const views = new WeakMap(); // each graph's container: its drawing's scroller, the watch on it, its current agent
