// The context table: values grouped by category, each with where it came from.

import { clipped, el, replace, show } from "./dom.js";

// Per variable, the table lists its latest HISTORY_SHOWN flips and sets (a fast run may set one
// thousands of times); time travel shows the state after any earlier one.
const HISTORY_SHOWN = 5;

const TITLES = {
  base: "Base", declarative: "Declarative", database: "Database",
  environment: "Environment", derived: "Derived", supplied: "Supplied by the runtime",
};

function statusBadge(status) {
  return el("span", { class: `badge status-${status}` }, status);
}

/** Who set a flag explicitly (a context_set flip: seed 000's "a tool that writes a derived
 * variable explicitly"): "tool save_plan" (its event row names the calling agent too), or
 * "agent Planner" when no tool did. */
export function setBy(cause) {
  if (!cause || cause.type !== "context_set") return null;
  if (cause.tool) return `tool ${cause.tool}`;
  return cause.agent ? `agent ${cause.agent}` : "the runtime";
}

function flipCause(flip) {
  const cause = flip.cause || {};
  if (cause.type === "tool_response") {
    return ` by tool ${cause.tool}${cause.status ? ` (${cause.status})` : ""}`;
  }
  if (cause.turns !== undefined) return ` by ${cause.agent} (${cause.turns} turns)`;
  if (cause.agent) return ` by ${cause.agent}: “${cause.text ?? ""}”`;
  return "";
}

function eventLink(seq, label, onJump) {
  return el("a", {
    href: `#event-${seq}`, class: "event-link",
    onclick: (event) => { event.preventDefault(); onJump(seq); },
  }, label);
}

function sourceCell(name, entry, category, { flipsByName, setsByName, onJump }) {
  const flips = flipsByName.get(name) || [];
  const sets = setsByName.get(name) || [];
  const parts = [];
  const source = entry?.source;
  const status = entry?.status;
  if (category === "declarative") {
    parts.push(el("code", { class: "source" }, "static"));
  } else if (category === "derived") {
    // "default" only while nothing has changed it: a flipped flag reads "flipped at #N" alone
    if (!flips.length && !sets.length) parts.push(statusBadge("default"));
  } else if (category === "database" || category === "environment" || (category === "base" && source !== "run")) {
    const label = category === "database" ? source : `$${source}`;
    parts.push(el("code", { class: "source" }, label), " ", statusBadge(status || "unknown"));
  } else {
    parts.push(el("code", { class: "source" }, source || "run"));
    if (status && status !== "resolved") parts.push(" ", statusBadge(status));
  }
  // a derived flag changed since the start says how (below), not how it started
  const changedSince = category === "derived" && (flips.length || sets.length);
  if (entry?.reason && !changedSince) parts.push(el("span", { class: `reason reason-${status}` }, entry.reason));
  const unlisted = Math.max(0, flips.length - HISTORY_SHOWN) + Math.max(0, sets.length - HISTORY_SHOWN);
  if (unlisted) {
    parts.push(el("span", { class: "history muted" },
      `${unlisted} earlier change${unlisted === 1 ? "" : "s"} not listed: time travel shows any of them`));
  }
  for (const flip of flips.slice(-HISTORY_SHOWN)) {
    const by = setBy(flip.cause);
    parts.push(by
      ? el("span", { class: "history set-by" }, `set by ${by} `, eventLink(flip.seq, `at #${flip.seq}`, onJump))
      : el("span", { class: "history" }, "flipped ", eventLink(flip.seq, `at #${flip.seq}`, onJump), flipCause(flip)));
  }
  for (const set of sets.slice(-HISTORY_SHOWN)) {
    parts.push(el("span", { class: "history" }, "set ", eventLink(set.seq, `at #${set.seq}`, onJump), " by context_set"));
  }
  return parts;
}

/**
 * Render the context grouped by category.
 * view: { context, provenance, flips, sets, variables, onJump, changed:Set, categories, baseFlags }
 * categories: the server's order of provenance categories (runs.views.CATEGORY_ORDER).
 */
export function renderContext(container, view) {
  const { context, provenance, variables, categories } = view;
  const baseFlags = view.baseFlags || {}; // the engine's BASE_FLAGS: name -> environment variable
  const byName = (changes) => {
    const map = new Map();
    for (const change of changes || []) {
      if (!map.has(change.name)) map.set(change.name, []);
      map.get(change.name).push(change);
    }
    return map;
  };
  const history = { flipsByName: byName(view.flips), setsByName: byName(view.sets), onJump: view.onJump };
  const names = new Set([...Object.keys(provenance), ...Object.keys(context)]);
  const groups = new Map(categories.map((c) => [c, []]));
  for (const name of names) {
    const category = provenance[name]?.category || variables[name]?.category || "supplied";
    if (!groups.has(category)) groups.set(category, []);
    groups.get(category).push(name);
  }
  const tables = [];
  for (const [category, members] of groups) {
    if (!members.length) continue;
    const rows = members.map((name) => {
      const present = Object.hasOwn(context, name);
      const value = context[name];
      const derived = category === "derived";
      return el("tr", {
        dataset: { name, category },
        class: [view.changed?.has(name) && "flash", derived && (value === true ? "flag-on" : "flag-off")],
      },
      el("th", { scope: "row", title: variables[name]?.description || null }, el("code", {}, name)),
      el("td", { class: ["value", !present && "absent"] }, present ? clipped(show(value), { limit: 300, key: `context ${name}` }) : "(absent)"),
      el("td", { class: "provenance" }, sourceCell(name, provenance[name], category, history)));
    });
    tables.push(el("table", { class: `context context-${category}` },
      el("caption", {}, TITLES[category] || category,
        category === "base" && members.some((name) => Object.hasOwn(baseFlags, name))
          ? el("span", { class: "caption-note muted" },
            " — every run has these, declared or not: seed 000's minimal base gives each run "
            + `its base flags (${Object.entries(baseFlags).map(([name, env]) => `${name} from $${env}`).join(", ")})`)
          : null),
      el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Value"), el("th", {}, "Source"))),
      el("tbody", {}, rows)));
  }
  replace(container, tables.length ? tables : el("p", { class: "muted" }, "No context."));
}
