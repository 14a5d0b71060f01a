// Time travel helpers: what changed between two states.

import { clipped, el, replace, show } from "./dom.js";

/**
 * List [path, old, new] for every top-level key of each namespace whose value differs.
 * namespaces: the state's namespaces as the server names them (contextadmin_sdk.engine.state.NAMESPACES).
 */
export function diffStates(before, after, namespaces) {
  const rows = [];
  for (const namespace of namespaces) {
    const a = before[namespace] || {};
    const b = after[namespace] || {};
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const key of keys) {
      if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) rows.push([`${namespace}.${key}`, a[key], b[key]]);
    }
  }
  return rows;
}

export function renderDiff(container, first, second, { onJump, namespaces }) {
  const rows = diffStates(first.state, second.state, namespaces);
  const flips = second.flips.filter((flip) => flip.seq > first.seq && flip.seq <= second.seq);
  const lines = rows.map(([path, old, now]) => el("tr", {},
    el("th", { scope: "row" }, el("code", {}, path)),
    el("td", { class: ["value", old === undefined && "absent"] }, old === undefined ? "(absent)" : clipped(show(old), { limit: 300 })),
    el("td", { class: ["value", now === undefined && "absent"] }, now === undefined ? "(absent)" : clipped(show(now), { limit: 300 }))));
  replace(container,
    el("p", {}, `From #${first.seq} to #${second.seq}: ${rows.length} change${rows.length === 1 ? "" : "s"}`,
      flips.length ? ", flips: " : "",
      flips.map((flip, index) => [index ? ", " : "",
        el("a", { href: `#event-${flip.seq}`, onclick: (event) => { event.preventDefault(); onJump(flip.seq); } },
          `${flip.name} at #${flip.seq}`)])),
    rows.length
      ? el("table", { class: "diff" },
        el("thead", {}, el("tr", {}, el("th", {}, "Path"), el("th", {}, `After #${first.seq}`), el("th", {}, `After #${second.seq}`))),
        el("tbody", {}, lines))
      : el("p", { class: "muted" }, "No differences."));
  container.hidden = false;
}
