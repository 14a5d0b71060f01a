// The runs list: rows from the page's JSON, kept live by /ws/runs/ (filters apply to live rows).

import { el, getJSON, jsonScript, replace, when } from "./dom.js";
import { LiveSocket, showStatus } from "./socket.js";

const table = document.getElementById("runs");
const body = document.getElementById("run-rows");
const empty = document.getElementById("runs-empty");
const filters = jsonScript("filters-data") || {};
const rows = new Map(); // run id -> { run, tr }

function detailUrl(id) {
  return table.dataset.detailUrl.replace("RUN_ID", encodeURIComponent(id));
}

function matches(run) {
  return (!filters.workflow || run.workflow === filters.workflow)
    && (!filters.status || run.status === filters.status)
    && (!filters.enterprise_id || run.enterprise_id === filters.enterprise_id)
    && (!filters.environment || run.environment === filters.environment);
}

function renderRow(run) {
  const flags = run.flags.length
    ? run.flags.map((flag) => el("span", { class: "chip chip-true" }, flag))
    : el("span", { class: "muted" }, run.flip_count ? `${run.flip_count} flips` : "none");
  return el("tr", { dataset: { runId: run.id, status: run.status } },
    el("td", {}, el("time", { datetime: run.started_at, title: run.started_at }, when(run.started_at))),
    el("td", {}, el("a", { href: detailUrl(run.id), class: "run-link" }, el("code", {}, run.id.slice(0, 12)))),
    el("td", {}, run.workflow),
    el("td", {}, run.enterprise_id),
    el("td", {}, el("span", { class: `pill env-${run.environment}` }, run.environment)),
    el("td", {}, el("span", { class: "pill", dataset: { status: run.status } }, run.status)),
    el("td", { class: "num event-count" }, String(run.event_count)),
    el("td", { class: "flags" }, flags),
  );
}

function upsert(run, { fresh = false } = {}) {
  const known = rows.get(run.id);
  if (!matches(run)) {
    if (known) { known.tr.remove(); rows.delete(run.id); }
    return;
  }
  const tr = renderRow(run);
  if (known) {
    known.tr.replaceWith(tr);
  } else {
    // newest first: place by start time
    const after = [...rows.values()].find((row) => row.run.started_at < run.started_at);
    body.insertBefore(tr, after ? after.tr : null);
    if (fresh) {
      tr.classList.add("flash");
      setTimeout(() => tr.classList.remove("flash"), 2000);
    }
  }
  rows.set(run.id, { run, tr });
}

function renderAll(runs) {
  rows.clear();
  replace(body);
  for (const run of runs) upsert(run);
  empty.hidden = rows.size > 0;
}

async function refresh() {
  try {
    const data = await getJSON(table.dataset.listUrl, { ...filters, format: "json" });
    renderAll(data.runs);
  } catch (error) {
    console.warn("runs list refresh failed", error);
  }
}

renderAll(jsonScript("runs-data") || []);

const conn = document.getElementById("conn");
let connectedBefore = false;
const socket = new LiveSocket(table.dataset.wsPath, {
  onStatus(state, detail) {
    showStatus(conn, state, detail);
    if (state === "live") {
      if (connectedBefore) refresh(); // we may have missed updates while away
      connectedBefore = true;
    }
  },
  onMessage(message) {
    if (message.type !== "run") return;
    upsert(message.run, { fresh: !rows.has(message.run.id) });
    empty.hidden = rows.size > 0;
  },
}).start();

window.inspector = { socket, rows };
