// Seed 004's agent and world namespaces: each path an output mapping wrote, its value, and the
// tool that set it (the server's "writes": path -> { tool, field, seq }).

import { clipped, el, replace, show } from "./dom.js";

/** Follow a dot path into the state; undefined when absent. */
function valueAt(state, path) {
  let value = state;
  for (const key of path.split(".")) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

/** Write a value the server reports at a dot path, creating the objects above it. */
export function writeAt(state, path, value) {
  const keys = path.split(".");
  let target = state;
  for (const key of keys.slice(0, -1)) {
    if (target[key] === null || typeof target[key] !== "object") target[key] = {};
    target = target[key];
  }
  target[keys.at(-1)] = value;
}

/**
 * Render the namespaces.
 * view: { state: { agent, world }, writes, namespaces: ["agent", "world"], mappings, onJump }
 * mappings: the run's pinned output mappings ({ tool, field, to }), named while nothing is written.
 */
export function renderNamespaces(container, { state, writes, namespaces, mappings, onJump }) {
  const tables = [];
  for (const namespace of namespaces) {
    const content = state[namespace] || {};
    const written = Object.keys(writes || {}).filter((path) => path.startsWith(`${namespace}.`)).sort();
    // keys no mapping wrote (none on this server; kept visible rather than hidden)
    const others = Object.keys(content)
      .map((key) => `${namespace}.${key}`)
      .filter((path) => !written.some((w) => w === path || w.startsWith(`${path}.`)));
    const rows = [...written, ...others].map((path) => {
      const value = valueAt(state, path);
      const write = writes?.[path];
      const source = write ? [
        "set by tool ", el("code", {}, write.tool),
        " ", el("a", {
          href: `#event-${write.seq}`, class: "event-link",
          onclick: (event) => { event.preventDefault(); onJump(write.seq); },
        }, `at #${write.seq}`),
        el("span", { class: "muted" }, ` (data.${write.field})`),
      ] : [];
      return el("tr", { dataset: { path } },
        el("th", { scope: "row" }, el("code", {}, path)),
        el("td", { class: ["value", value === undefined && "absent"] }, value === undefined ? "(absent)" : clipped(show(value), { limit: 300, key: `space ${path}` })),
        el("td", { class: "provenance" }, source));
    });
    if (!rows.length) continue;
    tables.push(el("table", { class: `context namespace-${namespace}`, dataset: { namespace } },
      el("caption", {}, namespace),
      el("thead", {}, el("tr", {}, el("th", {}, "Path"), el("th", {}, "Value"), el("th", {}, "Source"))),
      el("tbody", {}, rows)));
  }
  replace(container, tables.length ? tables : [
    el("p", { class: "muted" }, "Nothing written yet: each mapping writes when its tool responds."),
    el("ul", { class: "muted mappings" }, (mappings || []).map((mapping) => el("li", {},
      el("code", {}, mapping.to), " ← tool ", el("code", {}, mapping.tool), ` (data.${mapping.field})`))),
  ]);
}
