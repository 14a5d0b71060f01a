// Hand-off readiness: a condition is ${a} or ${a} and ${b}; it holds when every value is truthy.

import { el, replace, show, truthy } from "./dom.js";

export function conditionNames(condition) {
  return [...String(condition).matchAll(/\$\{\s*([^}]*?)\s*\}/g)].map((match) => match[1]);
}

export function conditionHolds(condition, context) {
  const names = conditionNames(condition);
  return names.length > 0 && names.every((name) => truthy(context[name]));
}

export function renderHandoffs(container, handoffs, context) {
  if (!handoffs.length) {
    replace(container, el("p", { class: "muted" }, "This workflow declares no hand-off rules."));
    return;
  }
  const rows = handoffs.map((handoff) => {
    const holds = conditionHolds(handoff.condition, context);
    const values = conditionNames(handoff.condition).map((name) => {
      const present = Object.hasOwn(context, name);
      return el("span", { class: ["chip", present && truthy(context[name]) ? "chip-true" : "chip-false"] },
        `${name} = ${present ? show(context[name]) : "(absent)"}`);
    });
    return el("tr", { dataset: { holds: String(holds) } },
      el("td", {}, el("span", { class: "agent" }, handoff.source_agent), " → ",
        el("span", { class: "agent" }, handoff.target_agent),
        handoff.description ? el("div", { class: "muted" }, handoff.description) : null),
      el("td", {}, el("code", {}, handoff.condition), el("div", { class: "chips" }, values)),
      el("td", {}, el("span", { class: ["badge", holds ? "status-holds" : "status-waiting"] }, holds ? "holds" : "not yet")));
  });
  replace(container, el("table", { class: "handoffs" },
    el("thead", {}, el("tr", {}, el("th", {}, "Hand-off"), el("th", {}, "Condition"), el("th", {}, "Now"))),
    el("tbody", {}, rows)));
}
