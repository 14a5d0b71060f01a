// The run page's model of the run: what the snapshot and each event message say, kept as the
// server sent it (the hand-off readiness, the sender, the output mappings' writes). The panels
// draw from it (run_render.js); nothing here touches the page.

import { serverNow } from "./lifecycle.js";
import { writeAt } from "./namespaces.js";
import { followResumes } from "./path_resumes.js";
import { senderOf } from "./stream.js";

/** The model before the first snapshot: the run as the page was rendered with it. */
export function runModel(page) {
  return {
    ready: false,
    lastSeq: page.stream_after,
    status: page.run.status,
    context: {},
    provenance: {},
    flips: [], // every flip so far, with its seq and cause
    sets: [], // context_set changes seen in the stream: { name, seq, value }
    changed: new Set(),
    revision: 0, // bumped when the context, its provenance, flips or sets change (redraw the table)
    execution: {}, // state.execution: current_agent, visited_agents, path (the agents graph)
    resumes: [], // the server's resumes: where the run resumed, marked on the path ({ seq, from, received_at })
    spaces: {}, // seed 004's namespaces: { agent: {...}, world: {...} }
    writes: {}, // the server's writes: agent/world path -> { tool, field, seq }
    spacesRevision: 0, // bumped when a namespace changes
    warnings: 0, // execution.warnings: changes the run refused (warning events), for the header
    readiness: null, // the server's hand-off readiness (null: not sent, rules shown without status)
    run: { ...page.run }, // the lifecycle: started_at, ended_at, last_event_at, ended_by
    // what the engine's state keeps of the agents: the latest hand-offs, the first speaker pairs
    limits: { path: page.constants.path_max_edges, exchanges: page.constants.exchanges_max },
  };
}

/** The output namespaces of a state the server sent (a snapshot's, the state API's). */
export function spacesOf(state, outputNamespaces) {
  return Object.fromEntries(outputNamespaces.map((name) => [name, state[name] || {}]));
}

/** Take a snapshot: the state as of its seq replaces the model's. */
export function applySnapshot(model, message, outputNamespaces) {
  model.ready = true;
  if (message.run) {
    model.run = { ...model.run, ...message.run,
      last_event_at: message.run.last_event_at || model.run.last_event_at };
  }
  model.lastSeq = message.seq;
  model.revision += 1;
  model.context = message.state.context;
  model.provenance = message.provenance;
  model.flips = message.flips || [];
  model.sets = model.sets.filter((set) => set.seq <= message.seq);
  model.status = message.state.execution.status;
  model.execution = message.state.execution;
  model.resumes = message.resumes || [];
  model.warnings = message.state.execution.warnings || 0;
  model.readiness = message.handoffs ?? null;
  model.spaces = spacesOf(message.state, outputNamespaces);
  model.writes = message.writes || {};
  model.spacesRevision += 1;
}

/** Take one event message: its flips, changes, status, writes and the readiness after it.
 * `ended` is the engine's set of ended statuses (paused is not one: it resumes to running). */
export function applyEvent(model, message, ended) {
  model.lastSeq = message.seq;
  const flipped = new Set();
  for (const flip of message.flips || []) {
    model.flips.push(flip);
    flipped.add(flip.name);
  }
  if (message.flips?.length) model.revision += 1;
  for (const [name, change] of Object.entries(message.changes || {})) {
    model.revision += 1;
    model.context[name] = change.new;
    model.changed.add(name);
    if (!flipped.has(name)) model.sets.push({ name, seq: message.seq, value: change.new });
  }
  // An event the server's summary already counted (the page's, or the snapshot's) keeps the
  // run's stored last event time; a newer one arrived just now.
  if (message.seq > (model.run.event_count || 0)) {
    model.run.last_event_at = new Date(serverNow()).toISOString();
    model.run.event_count = message.seq;
  }
  if (message.event.type === "warning") model.warnings += 1;
  model.resumes = followResumes(model.resumes, message);
  // as the engine: a new runtime took the run over; its first speaker followed no one here
  if (message.resumed) model.execution.current_agent = null;
  if (message.event.type === "run_status") {
    const status = message.event.status;
    model.status = status;
    const isEnded = ended.has(status);
    if (isEnded && !model.run.ended_at) model.run.ended_at = model.run.last_event_at;
    model.run.ended_by = !isEnded ? null : status === "failed" ? "crash" : status;
  }
  for (const write of message.outputs || []) { // what the tool's output mappings wrote
    if (!write.written) continue;
    writeAt(model.spaces, write.to, write.new);
    model.writes[write.to] = { tool: write.tool, field: write.field, seq: message.seq };
    model.spacesRevision += 1;
  }
  model.readiness = message.handoffs ?? null;
  followAgents(model.execution, message, model.limits);
}

/** Count a turn of `target` speaking after `source`, as the server's state does
 * (contextadmin_sdk.engine.state: execution.exchanges; the graph connects speakers with no hand-off between). */
function exchange(execution, source, target, max) {
  if (!source || source === target) return;
  execution.exchanges = execution.exchanges || [];
  const known = execution.exchanges.find((pair) => pair.source === source && pair.target === target);
  if (known) known.turns += 1;
  else if (!(execution.exchanges.length >= max)) execution.exchanges.push({ source, target, turns: 1 });
}

/** Follow the agents between snapshots: who spoke last, and each hand-off edge as it is taken,
 * kept as the engine keeps them (`limits`: the latest `path` hand-offs, the first `exchanges`
 * speaker pairs), so a page that watched the run reads as the server's state does. */
function followAgents(execution, message, limits = {}) {
  const { event, seq } = message;
  const visit = (agent) => {
    execution.current_agent = agent;
    execution.visited_agents = execution.visited_agents || [];
    if (!execution.visited_agents.includes(agent)) execution.visited_agents.push(agent);
  };
  const agent = senderOf(message);
  if (event.type === "agent_text" && agent) {
    exchange(execution, execution.current_agent, agent, limits.exchanges);
    visit(agent);
  }
  if (event.type === "handoff" && typeof event.target === "string") {
    execution.path = [...(execution.path || []),
      { source: agent, target: event.target, rule: Number.isInteger(event.rule) ? event.rule : null, seq }];
    if (execution.path.length > limits.path) execution.path = execution.path.slice(-limits.path);
    visit(event.target);
  }
}
