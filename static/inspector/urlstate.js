// The run page's shareable state in its query string: time-travel position (at), event filters
// (agent, type), the compare pair (compare=A-B, B "live" to follow the live end) and the
// selected event (event). Written with history.replaceState, so a reload or a pasted link shows
// the same view without adding history entries.

const KEYS = ["at", "agent", "type", "compare", "event"];

function seqOf(value) {
  return /^\d{1,15}$/.test(value || "") ? Number(value) : null;
}

/** Read the state from the current URL (unknown or malformed values are ignored). */
export function readState(search = window.location.search, hash = window.location.hash) {
  const params = new URLSearchParams(search);
  const [a, b] = (params.get("compare") || "").split("-");
  const fromHash = /^#event-(\d+)$/.exec(hash || "");
  return {
    at: seqOf(params.get("at")),
    agent: params.get("agent") || "",
    type: params.get("type") || "",
    compare: seqOf(a) !== null && (seqOf(b) !== null || b === "live")
      ? [seqOf(a), b === "live" ? "live" : seqOf(b)] : null,
    event: seqOf(params.get("event")) ?? (fromHash ? Number(fromHash[1]) : null),
  };
}

/** Merge `changes` into the URL ({key: null} removes a key). */
export function writeState(changes) {
  const url = new URL(window.location.href);
  for (const key of KEYS) {
    if (!(key in changes)) continue;
    const value = changes[key];
    if (value === null || value === undefined || value === "") url.searchParams.delete(key);
    else url.searchParams.set(key, Array.isArray(value) ? value.join("-") : String(value));
  }
  if (changes.event !== undefined) url.hash = "";
  window.history.replaceState(window.history.state, "", url);
}
