// The context table: values grouped by category, each with where it came from.

import { el, replace, show } from "./dom.js";

const TITLES = {
  base: "Base", declarative: "Declarative", database: "Database",
  environment: "Environment", derived: "Derived", supplied: "Supplied by the runtime",
};

function statusBadge(status) {
  return el("span", { class: `badge status-${status}` }, status);
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

function sourceCell(name, entry, category, { flips, sets, onJump }) {
  const parts = [];
  const source = entry?.source;
  const status = entry?.status;
  if (category === "declarative") {
    parts.push(el("code", { class: "source" }, "static"));
  } else if (category === "derived") {
    // "default" only while nothing has changed it: a flipped flag reads "flipped at #N" alone
    const changed = flips.some((f) => f.name === name) || sets.some((s) => s.name === name);
    if (!changed) parts.push(statusBadge("default"));
  } else if (category === "database" || category === "environment" || (category === "base" && source !== "run")) {
    const label = category === "database" ? source : `$${source}`;
    parts.push(el("code", { class: "source" }, label), " ", statusBadge(status || "unknown"));
  } else {
    parts.push(el("code", { class: "source" }, source || "run"));
    if (status && status !== "resolved") parts.push(" ", statusBadge(status));
  }
  if (entry?.reason) parts.push(el("span", { class: `reason reason-${status}` }, entry.reason));
  for (const flip of flips.filter((f) => f.name === name)) {
    parts.push(el("span", { class: "history" },
      "flipped ", eventLink(flip.seq, `at #${flip.seq}`, onJump), flipCause(flip)));
  }
  for (const set of sets.filter((s) => s.name === name)) {
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
      el("td", { class: ["value", !present && "absent"] }, present ? show(value) : "(absent)"),
      el("td", { class: "provenance" }, sourceCell(name, provenance[name], category, view)));
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
