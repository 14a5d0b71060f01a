// A run's lifecycle as the pages show it: stale (running, silent for too long), crash-ended,
// duration. The server sends the facts (status, ended_by, started_at, last_event_at); the
// stale threshold comes from the RUNS_STALE_AFTER_S setting, rendered into each page. The clock
// is the server's: each page is rendered with its time (`now`), and `serverNow()` adds the
// difference to the browser's; a laptop ten minutes fast showed every run that had just
// reported as stale, and ten minutes long.

let offsetMs = 0; // the server's clock minus the browser's, as of the page's rendering

/** Take the server's time the page was rendered with (an ISO timestamp). */
export function clockFrom(serverIso) {
  const server = Date.parse(serverIso || "");
  if (Number.isFinite(server)) offsetMs = server - Date.now();
}

/** Now, on the server's clock (ms). */
export function serverNow() {
  return Date.now() + offsetMs;
}

/** The time of a run's last sign of life: its last event, else its start. */
export function lastActivity(run) {
  return run.last_event_at || run.started_at;
}

/** True when a running run has had no event for more than `staleAfterS` seconds. */
export function isStale(run, staleAfterS, now = serverNow()) {
  if (run.status !== "running" || !staleAfterS) return false;
  const last = Date.parse(lastActivity(run));
  return Number.isFinite(last) && now - last > staleAfterS * 1000;
}

/** The label a run's status pill shows: "stale", "crashed (failed)" or the status itself. */
export function statusLabel(run, staleAfterS, now = serverNow()) {
  if (isStale(run, staleAfterS, now)) return "stale";
  if (run.ended_by === "crash") return "crashed (failed)";
  return run.status;
}

/** The data-status a pill gets (CSS colours stale and crash apart from the rest). */
export function statusKey(run, staleAfterS, now = serverNow()) {
  if (isStale(run, staleAfterS, now)) return "stale";
  return run.ended_by === "crash" ? "crash" : run.status;
}

/** "3 s", "4 min 05 s", "2 h 03 min". */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "—";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}

/** How long a run took (ended) or has been going (running). */
export function runDuration(run, now = serverNow()) {
  const start = Date.parse(run.started_at);
  const end = run.ended_at ? Date.parse(run.ended_at) : now;
  return duration(end - start);
}
