// Hand-off readiness as the server computed it (contextadmin_sdk.engine.handoffs_readiness, sent with the
// snapshot, every event and the state API): this module only displays it.

import { clipped, el, replace, show } from "./dom.js";

export const STATUS_LABELS = {
  holds: "holds",
  "not yet": "not yet",
  never: "never in this environment",
};

function statusBadge(row) {
  if (!row) return el("span", { class: "badge status-unknown", title: "the server sent no readiness" }, "—");
  return [
    el("span", { class: `badge status-${row.status.replace(" ", "-")}`, title: row.reason || null },
      STATUS_LABELS[row.status] || row.status),
    row.reason ? el("span", { class: "reason" }, row.reason) : null,
  ];
}

function valueChips(row) {
  if (!row) return null;
  return el("div", { class: "chips" }, row.values.map((value) =>
    el("span", { class: ["chip", value.present ? "chip-value" : "chip-absent"] },
      clipped(`${value.name} = ${value.present ? show(value.value) : "(absent)"}`, { limit: 120 }))));
}

/**
 * rules: the run's pinned hand-off rules; readiness: the server's list, one row per rule by
 * index, or null when the server sent none (the rules are then shown without a status).
 */
export function renderHandoffs(container, rules, readiness) {
  if (!rules.length) {
    replace(container, el("p", { class: "muted" }, "This workflow declares no hand-off rules."));
    return;
  }
  const byIndex = new Map((readiness || []).map((row) => [row.index, row]));
  const rows = rules.map((rule, index) => {
    const row = byIndex.get(index) || null;
    return el("tr", { dataset: { index: String(index), status: row ? row.status : "unknown" } },
      el("td", {}, el("span", { class: "agent" }, rule.source_agent), " → ",
        el("span", { class: "agent" }, rule.target_agent),
        rule.description ? el("div", { class: "muted" }, rule.description) : null),
      el("td", {}, el("code", {}, rule.condition), valueChips(row)),
      el("td", { class: "readiness" }, statusBadge(row)));
  });
  replace(container, el("table", { class: "handoffs" },
    el("thead", {}, el("tr", {}, el("th", {}, "Hand-off"), el("th", {}, "Condition"), el("th", {}, "Now"))),
    el("tbody", {}, rows)),
  readiness ? null : el("p", { class: "muted small" }, "Readiness unavailable: the server sent no hand-off status."));
}
