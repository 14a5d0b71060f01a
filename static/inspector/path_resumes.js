// Where a run resumed, marked on the path taken under the agents graph: the server's
// `resumes` (execution.resumes with when it received each: a run_status of running after the
// run's first event, sent when a paused run goes on or a new runtime takes over a crashed
// one's run), so an operator sees where one runtime stopped and the next took over.

import { el, when } from "./dom.js";
import { serverNow } from "./lifecycle.js";

/** Why the run resumed there, in words (`from`: the status it resumed from). */
function why(resume) {
  return resume.from === "paused"
    ? "the run was paused; it went on from here"
    : "the runtime before stopped reporting without ending the run; a new one took it over here";
}

/** One resume's marker: "⟲ resumed here at #9 (2026-11-25 05:50:38 UTC)", its reason as tooltip. */
export function resumeMarker(resume) {
  const at = resume.received_at ? ` (${when(resume.received_at)})` : "";
  return el("span", { class: "path-resume", title: why(resume), dataset: { seq: resume.seq } },
    `⟲ resumed here at #${resume.seq}${at}`);
}

/** "N hand-offs taken"; once the state keeps only the latest `max` (the engine's
 * PATH_MAX_EDGES), it says so: how many were taken in all, the state no longer knows. */
export function pathCount(path, max) {
  if (max && path.length >= max) {
    return `the latest ${max.toLocaleString("en-US")} hand-offs kept (earlier ones are not kept in the run's state)`;
  }
  return `${path.length} hand-off${path.length === 1 ? "" : "s"} taken`;
}

/**
 * The path's text after "N hand-offs taken": its last `limit` hand-offs and, in seq order among
 * them, each resume after the last hand-off left out ("" when there is neither).
 */
export function pathTaken(path, resumes, limit) {
  const shown = path.slice(-limit);
  const before = path.length > limit ? path[path.length - limit - 1].seq : -Infinity;
  const items = [
    ...shown.map((edge) => ({ seq: edge.seq, node: `${edge.source} → ${edge.target} at #${edge.seq}` })),
    ...(resumes || []).filter((resume) => resume.seq > before).map((resume) => ({ seq: resume.seq, node: resumeMarker(resume) })),
  ].sort((a, b) => a.seq - b.seq);
  if (!items.length) return "";
  return [path.length > limit ? ", the last: " : ": ", items.map((item, i) => [i ? ", " : "", item.node])];
}

/** Follow an event message: the server marks an event that resumed the run (`resumed`, the
 * engine's execution.resumes entry). A stored event's mark has the time the server received
 * it; a live one's, none yet: its arrival, as the page's "last event" is. */
export function followResumes(resumes, message) {
  if (!message.resumed) return resumes;
  return [...resumes, { received_at: new Date(serverNow()).toISOString(), ...message.resumed }];
}
