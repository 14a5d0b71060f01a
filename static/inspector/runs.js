// The runs list: one page of rows from the page's JSON, kept live by /ws/runs/. The search
// applies to live rows too; new runs join only the newest page (an older page stays put).
// The page re-reads its rows (?format=json) after a reconnect and every RESYNC_MS: a
// runs-list message lost on the way (a Redis restart, a failed broadcast, a socket away) is
// never sent again, and a run that ended meanwhile would read running, then stale.

import { el, focusKept, getJSON, jsonScript, replace, shortId, when } from "./dom.js";
import { clockFrom, lastActivity, runDuration, statusKey, statusLabel } from "./lifecycle.js";
import { LiveSocket, showStatus } from "./socket.js";

const table = document.getElementById("runs");
const body = document.getElementById("run-rows");
const empty = document.getElementById("runs-empty");
const meta = jsonScript("list-meta") || {};
const filters = meta.filters || {};
const staleAfterS = meta.stale_after_s || 0;
clockFrom(meta.now); // stale and durations on the server's clock
const rows = new Map(); // run id -> { run, tr }
const RESYNC_MS = 30_000;
let arrived = null; // while a re-read is out: the messages that came meanwhile, newer than it

function detailUrl(id) {
  return table.dataset.detailUrl.replace("RUN_ID", encodeURIComponent(id));
}

/** A datetime-local value ("2026-01-31T12:00") is UTC on the server; read it the same way. */
function utc(value) {
  return Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
}

function matches(run) {
  const started = Date.parse(run.started_at);
  return (!filters.q || run.id.startsWith(filters.q))
    && (!filters.workflow || run.workflow === filters.workflow)
    && (!filters.status || run.status === filters.status)
    && (!filters.enterprise_id || run.enterprise_id === filters.enterprise_id)
    && (!filters.environment || run.environment === filters.environment)
    && (!filters.since || started >= utc(filters.since))
    && (!filters.until || started < utc(filters.until))
    && (!filters.flag || run.flags.includes(filters.flag));
}

function renderRow(run) {
  const flags = run.flags.length
    ? run.flags.map((flag) => el("span", { class: "chip chip-true" }, flag))
    : el("span", { class: "muted" }, run.flip_count ? `${run.flip_count} flips` : "none");
  const last = lastActivity(run);
  return el("tr", { dataset: { runId: run.id, status: run.status } },
    el("td", { dataset: { label: "started" } }, el("time", { datetime: run.started_at, title: run.started_at }, when(run.started_at))),
    el("td", {}, el("a", { href: detailUrl(run.id), class: "run-link", title: run.id }, el("code", {}, shortId(run.id)))),
    el("td", {}, run.workflow),
    el("td", {}, run.enterprise_id),
    el("td", {}, el("span", { class: `pill env-${run.environment}` }, run.environment)),
    el("td", { class: "status" }, el("span", { class: "pill", dataset: { status: statusKey(run, staleAfterS) } },
      statusLabel(run, staleAfterS))),
    el("td", { class: "duration", dataset: { label: "took" } }, runDuration(run)),
    el("td", { class: "last-event", dataset: { label: "last event" } }, run.event_count && last ? el("time", { datetime: last, title: last }, when(last)) : "—"),
    el("td", { class: "num event-count", dataset: { label: "events" } }, String(run.event_count)),
    el("td", { class: "flags", dataset: { label: "flags" } }, flags),
  );
}

function upsert(run, { fresh = false, live = false } = {}) {
  // (live: from the socket; a run new to an older page does not belong on it)
  const known = rows.get(run.id);
  if (live && known && !run.last_event_at) {
    run.last_event_at = known.run.last_event_at; // the server's, from the batch it committed
  }
  if (!matches(run)) {
    if (known) { known.tr.remove(); rows.delete(run.id); }
    return;
  }
  if (!known && live && meta.paged) return; // an older page keeps its rows
  const tr = renderRow(run);
  if (known) {
    focusKept(body, () => known.tr.replaceWith(tr));
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
  focusKept(body, () => {
    rows.clear();
    replace(body);
    for (const run of runs) upsert(run);
  });
  empty.hidden = rows.size > 0;
}

/** Redraw the clock-driven cells (duration, stale) without a request. */
function tick() {
  for (const { run, tr } of rows.values()) {
    if (!run.live) continue; // running or paused: the clock moves them
    const pill = tr.querySelector("td.status .pill");
    pill.dataset.status = statusKey(run, staleAfterS);
    pill.textContent = statusLabel(run, staleAfterS);
    tr.querySelector("td.duration").textContent = runDuration(run);
  }
}

/** The cursor of this page (an older page re-reads its own slice; the newest page has none). */
function cursor() {
  if (!meta.paged) return {};
  const query = new URLSearchParams(window.location.search);
  return Object.fromEntries(["before", "after"].filter((key) => query.get(key)).map((key) => [key, query.get(key)]));
}

/** The newest page's "Older →": the server's cursor after the page it just sent (the rows
 * re-read replace those the page was rendered with, so the old cursor would skip some). */
function olderShow(next) {
  let older = document.getElementById("page-older");
  if (!next) {
    older?.remove();
    return;
  }
  const query = new URLSearchParams(Object.entries(filters).filter(([, value]) => value));
  query.set("before", next);
  if (!older) {
    older = el("a", { id: "page-older", rel: "next" }, "Older →");
    document.getElementById("pager").append(older);
  }
  older.href = `${table.dataset.listUrl}?${query}`;
}

async function refresh() {
  if (arrived) return; // one at a time
  arrived = [];
  try {
    const data = await getJSON(table.dataset.listUrl, { ...filters, ...cursor(), format: "json" });
    const later = arrived;
    arrived = null;
    renderAll(data.runs);
    if (!meta.paged) olderShow(data.next);
    for (const run of later) upsert(run, { live: true }); // sent after the page was read
    empty.hidden = rows.size > 0;
  } catch (error) {
    arrived = null;
    console.warn("runs list refresh failed", error);
  }
}

renderAll(jsonScript("runs-data") || []);
setInterval(tick, 5000);

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
    arrived?.push(message.run);
    upsert(message.run, { fresh: !rows.has(message.run.id), live: true });
    empty.hidden = rows.size > 0;
  },
}).start();
// (not once the socket closed for good: a session that ended gets the login page, not data)
setInterval(() => { if (!socket.stopped && document.visibilityState === "visible") refresh(); }, RESYNC_MS);

window.inspector = { socket, rows, tick, refresh };
