// The front page's "Runs live now": the live runs (running or paused, as the server's
// summary says: run.live), kept live by /ws/runs/, and re-read from the server (?format=json)
// after a reconnect and every RESYNC_MS: a runs-list message lost on the way (a Redis restart,
// a failed broadcast, a socket away) is never sent again, and a run that ended meanwhile
// would read live, then stale, for as long as the page stays open.

import { el, focusKept, getJSON, jsonScript, replace, shortId, when } from "./dom.js";
import { clockFrom, isStale, runDuration, statusKey, statusLabel } from "./lifecycle.js";
import { LiveSocket, showStatus } from "./socket.js";

const list = document.getElementById("live-runs");
const empty = document.getElementById("live-empty");
const staleAfterS = jsonScript("stale-after") || 0;
const runs = new Map(); // run id -> summary (live ones only)
const more = document.getElementById("live-more");
let meta = jsonScript("live-meta") || { total: 0, shown: 20 };
clockFrom(meta.now); // stale and durations on the server's clock
let unlisted = 0; // live runs the page was not sent (older than the newest `meta.shown`)
const RESYNC_MS = 30_000;
let arrived = null; // while a re-read is out: the messages that came meanwhile, newer than it

function detailUrl(id) {
  return list.dataset.detailUrl.replace("RUN_ID", encodeURIComponent(id));
}

function render() {
  const items = [...runs.values()].sort((a, b) => (a.started_at < b.started_at ? 1 : -1));
  const hidden = Math.max(0, items.length - meta.shown) + unlisted;
  more.hidden = hidden === 0;
  replace(more, `and ${hidden} older live ${hidden === 1 ? "run" : "runs"} not listed here: `,
    el("a", { href: `${more.dataset.listUrl}?status=running` }, "running runs →"));
  focusKept(list, () => replace(list, items.slice(0, meta.shown).map((run) => el("li", { dataset: { runId: run.id, stale: String(isStale(run, staleAfterS)) } },
    el("a", { href: detailUrl(run.id), title: run.id }, el("code", {}, shortId(run.id))),
    " ", el("strong", {}, run.workflow), " · ", run.enterprise_id, " · ",
    el("span", { class: "pill", dataset: { status: statusKey(run, staleAfterS) } }, statusLabel(run, staleAfterS)),
    " ", el("span", { class: "muted" }, `${run.event_count} ${run.event_count === 1 ? "event" : "events"} · started ${when(run.started_at)} · ${runDuration(run)}`),
  ))));
  empty.hidden = runs.size > 0;
}

/** The workflows table's "Last run": the newest run of the run's workflow, as it changes
 * (`reread`: the server's answer, newest or not: the shown one may have been deleted). */
function lastRun(run, { reread = false } = {}) {
  const row = document.querySelector(`#workflows tr[data-workflow="${CSS.escape(run.workflow)}"]`);
  const cell = row && row.querySelector("td.last-run");
  if (!cell) return;
  const shown = cell.dataset.startedAt;
  if (!reread && cell.dataset.runId !== run.id && shown && new Date(shown) > new Date(run.started_at)) return;
  cell.dataset.runId = run.id;
  cell.dataset.startedAt = run.started_at;
  replace(cell,
    el("a", { href: detailUrl(run.id) }, el("time", { datetime: run.started_at }, when(run.started_at))),
    " ", el("span", { class: "pill", dataset: { status: run.status } }, run.status));
}

function update(run, { fresh = false } = {}) {
  if (!fresh) lastRun(run);
  if (!run.live) {
    if (!runs.delete(run.id) && unlisted > 0) unlisted -= 1; // an unlisted one ended
  } else {
    const known = runs.get(run.id);
    // the server's time of the run's last event (a start's summary has none yet)
    const last = run.last_event_at || (!fresh && known && known.last_event_at) || null;
    runs.set(run.id, { ...run, last_event_at: last });
  }
  render();
}

for (const run of jsonScript("live-data") || []) update(run, { fresh: true });
unlisted = Math.max(0, meta.total - runs.size);
render();
setInterval(render, 5000); // durations and the stale marker move with the clock

/** Re-read the live runs from the server; what the socket sent meanwhile is newer: applied after. */
async function reread() {
  if (arrived) return; // one at a time
  arrived = [];
  try {
    const data = await getJSON(window.location.pathname, { format: "json" });
    const later = arrived;
    arrived = null;
    meta = data.live_meta;
    clockFrom(meta.now);
    runs.clear();
    for (const run of data.live) update(run, { fresh: true });
    unlisted = Math.max(0, meta.total - runs.size);
    for (const run of data.last_runs) lastRun(run, { reread: true });
    for (const run of later) update(run);
    render();
  } catch (error) {
    arrived = null;
    console.warn("live runs re-read failed", error);
  }
}

let connectedBefore = false;
const socket = new LiveSocket(list.dataset.wsPath, {
  onStatus(state, detail) {
    showStatus(document.getElementById("conn"), state, detail);
    if (state === "live") {
      if (connectedBefore) reread(); // updates sent while the socket was away are not sent again
      connectedBefore = true;
    }
  },
  onMessage(message) {
    if (message.type !== "run") return;
    arrived?.push(message.run);
    update(message.run);
  },
}).start();
// (not once the socket closed for good: a session that ended gets the login page, not data)
setInterval(() => { if (!socket.stopped && document.visibilityState === "visible") reread(); }, RESYNC_MS);

window.inspector = { socket, runs, reread };
