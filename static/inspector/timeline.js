// The derived flags timeline: one SVG strip per flag across the run's seqs, flips marked. A flag
// that changed more often than its strip can show one by one (MAX_MARKS) is drawn grouped: one
// bar per range of events (BUCKETS of them), darker for more changes, so the drawing and its
// accessible names stay the same size however many flips a run has.

import { el, replace, svg } from "./dom.js";

const WIDTH = 1000;
const HEIGHT = 18;
export const BUCKETS = 50; // a grouped strip's ranges: 20 of its 1000 units each (~10 px)
export const MAX_MARKS = BUCKETS; // more changes than this on one flag: drawn grouped
const NAME_MAX = 200; // an accessible name is a summary, never a list of every flip

function x(seq, lastSeq) {
  return lastSeq > 0 ? (seq / lastSeq) * WIDTH : 0;
}

function count(n, what) {
  return `${n.toLocaleString("en-US")} ${what}${n === 1 ? "" : "s"}`;
}

function clip(text) {
  return text.length > NAME_MAX ? `${text.slice(0, NAME_MAX - 1)}…` : text;
}

/** The flips of one flag in ranges: the BUCKETS ranges of seqs (from, to] across the run. */
export function bucketsOf(changes, lastSeq) {
  const span = Math.max(1, lastSeq);
  const buckets = Array.from({ length: BUCKETS }, (_, index) => ({
    index, from: Math.floor((index * span) / BUCKETS), to: Math.floor(((index + 1) * span) / BUCKETS), changes: [],
  }));
  for (const change of changes) {
    const index = Math.min(BUCKETS - 1, Math.max(0, Math.ceil((change.seq * BUCKETS) / span) - 1));
    buckets[index].changes.push(change);
  }
  return buckets;
}

function marks(flag, changes, lastSeq, onJump) {
  return changes.map((change) => {
    const at = x(change.seq, lastSeq);
    return svg("g", {
      class: `mark mark-${change.kind}`, tabindex: "0", role: "link",
      "aria-label": `${flag.name} ${change.label}`,
      onclick: () => onJump(change.seq),
      onkeydown: (event) => { if (event.key === "Enter") onJump(change.seq); },
    },
    svg("title", {}, `${flag.name} → ${JSON.stringify(change.value)} ${change.label}`),
    svg("rect", { x: Math.max(0, at - 6), y: 0, width: 12, height: HEIGHT, class: "mark-hit" }),
    svg("line", { x1: at, x2: at, y1: 0, y2: HEIGHT, class: "mark-line", "vector-effect": "non-scaling-stroke" }));
  });
}

/** A flag changed too often to mark each change: a bar per range of events with changes (its
 * shade: how many), the flag's value between them, each bar a link to its range's first event. */
function groups(flag, changes, lastSeq, onJump) {
  const buckets = bucketsOf(changes, lastSeq);
  const most = Math.max(1, ...buckets.map((bucket) => bucket.changes.length));
  const shapes = [];
  let value = flag.initial;
  for (const bucket of buckets) {
    const x1 = (bucket.index * WIDTH) / BUCKETS;
    const x2 = ((bucket.index + 1) * WIDTH) / BUCKETS;
    const inside = bucket.changes;
    if (!inside.length) {
      shapes.push(segment(x1, x2, value));
      continue;
    }
    const first = inside[0].seq;
    const last = inside.at(-1).seq;
    const on = inside.filter((change) => change.value === true).length;
    value = inside.at(-1).value;
    const range = first === last ? `at #${first}` : `from #${first} to #${last}`;
    const what = `${flag.name}: ${count(inside.length, "flip")} ${range}`;
    shapes.push(svg("g", {
      class: "bucket", tabindex: "0", role: "link", "aria-label": what,
      dataset: { count: String(inside.length), first: String(first), last: String(last) },
      onclick: () => onJump(first),
      onkeydown: (event) => { if (event.key === "Enter") onJump(first); },
    },
    svg("title", {}, `${what} (${on} to true, ${inside.length - on} to false; then ${JSON.stringify(value)}). `
      + `Click: the first of them, #${first}.`),
    svg("rect", {
      x: x1 + 1, y: 1, width: x2 - x1 - 2, height: HEIGHT - 2, class: "bucket-bar",
      "fill-opacity": (0.25 + (0.75 * inside.length) / most).toFixed(2),
    })));
  }
  return shapes;
}

/**
 * flags: [{ name, initial, changes: [{ seq, value, kind, label }] }], lastSeq, cursor (seq or null).
 */
export function renderTimeline(container, { flags, lastSeq, cursor, onJump }) {
  if (!flags.length) {
    replace(container, el("p", { class: "muted" }, "This workflow declares no derived flags."));
    return;
  }
  let total = 0;
  let latest = null; // the run's latest change of any flag: { flag, change }
  let grouped = 0;
  const strips = flags.map((flag) => {
    const changes = [...flag.changes].sort((a, b) => a.seq - b.seq);
    total += changes.length;
    const newest = changes.at(-1);
    if (newest && (!latest || newest.seq >= latest.change.seq)) latest = { flag, change: newest };
    const group = changes.length > MAX_MARKS;
    if (group) grouped += 1;
    const shapes = [];
    if (group) {
      shapes.push(groups(flag, changes, lastSeq, onJump));
    } else {
      let from = 0;
      let value = flag.initial;
      for (const change of changes) {
        shapes.push(segment(x(from, lastSeq), x(change.seq, lastSeq), value));
        from = change.seq;
        value = change.value;
      }
      shapes.push(segment(x(from, lastSeq), WIDTH, value), marks(flag, changes, lastSeq, onJump));
    }
    if (cursor !== null && cursor !== undefined) {
      const at = x(cursor, lastSeq);
      shapes.push(svg("line", { x1: at, x2: at, y1: 0, y2: HEIGHT, class: "cursor", "vector-effect": "non-scaling-stroke" }));
    }
    const current = changes.filter((c) => cursor === null || cursor === undefined || c.seq <= cursor).at(-1);
    const now = current ? current.value : flag.initial;
    const name = !changes.length ? `${flag.name}: never flipped`
      : `${flag.name}: ${count(changes.length, "flip")}${group ? `, grouped in ${BUCKETS} ranges of events` : ""}; `
        + `latest ${newest.label}`;
    return el("div", { class: "strip", dataset: { flag: flag.name, flips: String(changes.length), grouped: String(group) } },
      el("span", { class: ["strip-name", now === true ? "on" : "off"], title: flag.name }, flag.name),
      svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", class: "strip-svg", role: "img",
        "aria-label": clip(name) },
      shapes));
  });
  const summary = [`${count(total, "flip")} of ${count(flags.length, "flag")}`];
  if (latest) summary.push(`; latest: ${latest.flag.name} → ${JSON.stringify(latest.change.value)}, ${latest.change.label}`);
  summary.push(".");
  if (grouped) {
    summary.push(` More than ${MAX_MARKS} flips: grouped, one bar per ${BUCKETS}th of the run, darker for more `
      + "(click: its first event). The context table lists the latest flips; time travel, any state.");
  }
  const axis = el("div", { class: "strip axis" }, el("span", { class: "strip-name" }),
    el("div", { class: "axis-labels" }, el("span", {}, "#0"), el("span", {}, `#${lastSeq}`)));
  replace(container, el("p", { class: "timeline-summary muted", id: "timeline-summary" }, summary.join("")),
    strips, axis);
}

function segment(x1, x2, value) {
  return svg("rect", {
    x: x1, y: 3, width: Math.max(0, x2 - x1), height: HEIGHT - 6,
    class: value === true ? "seg seg-on" : "seg seg-off",
  });
}
