// The derived flags timeline: one SVG strip per flag across the run's seqs, flips marked.

import { el, replace, svg } from "./dom.js";

const WIDTH = 1000;
const HEIGHT = 18;

function x(seq, lastSeq) {
  return lastSeq > 0 ? (seq / lastSeq) * WIDTH : 0;
}

/**
 * flags: [{ name, initial, changes: [{ seq, value, kind, label }] }], lastSeq, cursor (seq or null).
 */
export function renderTimeline(container, { flags, lastSeq, cursor, onJump }) {
  if (!flags.length) {
    replace(container, el("p", { class: "muted" }, "This workflow declares no derived flags."));
    return;
  }
  const strips = flags.map((flag) => {
    const shapes = [];
    let from = 0;
    let value = flag.initial;
    const changes = [...flag.changes].sort((a, b) => a.seq - b.seq);
    for (const change of changes) {
      shapes.push(segment(x(from, lastSeq), x(change.seq, lastSeq), value));
      from = change.seq;
      value = change.value;
    }
    shapes.push(segment(x(from, lastSeq), WIDTH, value));
    for (const change of changes) {
      const at = x(change.seq, lastSeq);
      shapes.push(svg("g", {
        class: `mark mark-${change.kind}`, tabindex: "0", role: "link",
        "aria-label": `${flag.name} ${change.label}`,
        onclick: () => onJump(change.seq),
        onkeydown: (event) => { if (event.key === "Enter") onJump(change.seq); },
      },
      svg("title", {}, `${flag.name} → ${JSON.stringify(change.value)} ${change.label}`),
      svg("rect", { x: Math.max(0, at - 6), y: 0, width: 12, height: HEIGHT, class: "mark-hit" }),
      svg("line", { x1: at, x2: at, y1: 0, y2: HEIGHT, class: "mark-line", "vector-effect": "non-scaling-stroke" })));
    }
    if (cursor !== null && cursor !== undefined) {
      const at = x(cursor, lastSeq);
      shapes.push(svg("line", { x1: at, x2: at, y1: 0, y2: HEIGHT, class: "cursor", "vector-effect": "non-scaling-stroke" }));
    }
    const current = changes.filter((c) => cursor === null || cursor === undefined || c.seq <= cursor).at(-1);
    const now = current ? current.value : flag.initial;
    return el("div", { class: "strip", dataset: { flag: flag.name, flips: String(changes.length) } },
      el("span", { class: ["strip-name", now === true ? "on" : "off"] }, flag.name),
      svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", class: "strip-svg", role: "img",
        "aria-label": `${flag.name}: ${changes.length ? changes.map((c) => c.label).join(", ") : "never flipped"}` },
      shapes));
  });
  const axis = el("div", { class: "strip axis" }, el("span", { class: "strip-name" }),
    el("div", { class: "axis-labels" }, el("span", {}, "#0"), el("span", {}, `#${lastSeq}`)));
  replace(container, strips, axis);
}

function segment(x1, x2, value) {
  return svg("rect", {
    x: x1, y: 3, width: Math.max(0, x2 - x1), height: HEIGHT - 6,
    class: value === true ? "seg seg-on" : "seg seg-off",
  });
}
