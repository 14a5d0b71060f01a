// The hand-off rules that held but the chat did not take, shown on the event where the chat
// went elsewhere: another rule fired first, AG2 handed off on a condition of the team's own,
// or the floor went to another speaker (back to the user, say) with no hand-off. Read from the
// readiness the server computed (each event message carries it, after its event; a hand-off
// changes no value, so its own is the readiness the chat routed on): the page only picks the
// rules of the agent that had the floor; it judges no condition.

import { el } from "./dom.js";

/**
 * The rules passed over at `message`, each { index, source, target, why }.
 * before: what the page knew just before it: { readiness, current (the agent that had the
 * floor), resumed (the event before resumed the run: a new runtime took over, nothing was
 * passed over) }; sender: the event's sender as the server normalised it.
 */
export function passedOver(message, before, sender) {
  const { event } = message;
  let source;
  let went;
  let readiness;
  let why;
  if (event.type === "handoff") {
    source = sender;
    went = event.target;
    readiness = message.handoffs ?? before.readiness;
    why = Number.isInteger(event.rule) ? `rule ${event.rule} fired first`
      : `the chat handed off to ${went} without a rule`;
  } else if (event.type === "agent_text" && before.current && sender && sender !== before.current && !before.resumed) {
    source = before.current;
    went = sender;
    readiness = before.readiness;
    why = `the chat went to ${went}`;
  } else {
    return [];
  }
  return (readiness || [])
    .filter((row) => row.status === "holds" && row.source_agent === source && row.target_agent !== went
      && row.index !== event.rule)
    .map((row) => ({ index: row.index, source: row.source_agent, target: row.target_agent, why }));
}

/** "held, not taken: rule 1 InterviewAgent → Closer (rule 0 fired first)" under the event. */
export function passedNote(passed) {
  return el("div", { class: "ev-passed muted", dataset: { rules: passed.map((rule) => rule.index).join(",") } },
    "⤼ held, not taken: ", passed.map((rule, i) => [i ? "; " : "",
      `rule ${rule.index} ${rule.source} → ${rule.target} (${rule.why})`]));
}
