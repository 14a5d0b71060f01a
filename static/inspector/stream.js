// The event stream: newest at the bottom, filters by agent and type, pause that buffers.

import { el, replace, show } from "./dom.js";

const MAX_ROWS = 3000; // older rows leave the page; time travel still reaches every event

/** The sender the server normalised (message.agent); else the event's own agent if a string. */
export function senderOf(message) {
  if (typeof message.agent === "string") return message.agent;
  return typeof message.event?.agent === "string" ? message.event.agent : "";
}

function body(event) {
  switch (event.type) {
    case "agent_text":
      return el("div", { class: "ev-text" }, event.text ?? "");
    case "tool_response":
      return el("div", { class: "ev-text" },
        el("code", {}, event.tool), event.status ? ` → ${event.status}` : "",
        event.data !== undefined ? el("pre", { class: "ev-data" }, JSON.stringify(event.data, null, 1)) : null);
    case "context_set":
      return el("div", { class: "ev-text" }, el("code", {}, event.name), " = ", show(event.value));
    case "run_status":
      return el("div", { class: "ev-text" }, "run ", el("span", { class: "pill", dataset: { status: event.status } }, event.status));
    case "handoff":
      return el("div", { class: "ev-text" }, "hands off to ", el("span", { class: "agent" }, String(event.target ?? "")),
        Number.isInteger(event.rule) ? el("span", { class: "muted" }, ` (rule ${event.rule})`) : null);
    default:
      return el("div", { class: "ev-text" }, JSON.stringify(event));
  }
}

export class EventStream {
  /** types: the event types the server accepts (runs.engine.EVENT_TYPES), for the type filter. */
  constructor({ list, empty, noMatch, agentSelect, typeSelect, pauseButton, types, onFilter, onSelect }) {
    this.list = list;
    this.empty = empty;
    this.noMatch = noMatch; // says so when the filters hide every event
    this.onFilter = onFilter || (() => {});
    this.onSelect = onSelect || (() => {});
    this.selected = null;
    this.scrollPending = null;
    this.pending = []; // messages waiting for the next frame
    this.frame = null;
    this.agentSelect = agentSelect;
    this.typeSelect = typeSelect;
    this.pauseButton = pauseButton;
    this.paused = false;
    this.buffer = [];
    this.agents = new Set();
    this.types = new Set();
    for (const type of types) this.addOption(this.typeSelect, this.types, type);
    agentSelect.addEventListener("change", () => this.applyFilters({ user: true }));
    typeSelect.addEventListener("change", () => this.applyFilters({ user: true }));
    this.stuck = true; // the list follows its newest row until the reader scrolls up
    list.addEventListener("scroll", () => { this.stuck = this.atBottom(); }, { passive: true });
    list.addEventListener("click", (event) => {
      const link = event.target.closest("a.ev-seq");
      if (!link) return;
      event.preventDefault();
      this.select(Number(link.closest("li").dataset.seq));
    });
    pauseButton.addEventListener("click", () => this.setPaused(!this.paused));
  }

  addOption(select, seen, value) {
    if (!value || seen.has(value)) return;
    seen.add(value);
    select.append(el("option", { value }, value));
  }

  /** Take one `event` message (already deduped and in order). Rows are appended once a
   * frame, together: a fast run (1,000 events/s) costs one layout per frame, not per event. */
  add(message) {
    if (this.paused) {
      this.buffer.push(message);
      this.updatePauseLabel();
      return;
    }
    this.pending.push(message);
    if (this.frame === null) {
      this.frame = requestAnimationFrame(() => {
        this.frame = null;
        const pending = this.pending;
        this.pending = [];
        // more than a page keeps: only the newest MAX_ROWS are ever shown
        this.render(pending.length > MAX_ROWS ? pending.slice(-MAX_ROWS) : pending);
      });
    }
  }

  render(messages) {
    const stick = this.stuck; // kept by the scroll listener: no layout read before the append
    const fragment = document.createDocumentFragment();
    for (const message of messages) fragment.append(this.row(message));
    this.list.append(fragment);
    while (this.list.childElementCount > MAX_ROWS) this.list.firstElementChild.remove();
    this.empty.hidden = this.list.childElementCount > 0;
    this.updateNoMatch();
    if (stick) this.list.scrollTop = this.list.scrollHeight;
    if (this.scrollPending !== null) { // the selected event from the URL, once it arrives
      const row = document.getElementById(`event-${this.scrollPending}`);
      if (row) { this.scrollPending = null; row.scrollIntoView({ block: "center" }); }
    }
  }

  row(message) {
    const { seq, event } = message;
    const who = senderOf(message) || event.tool || "";
    this.addOption(this.agentSelect, this.agents, who);
    this.addOption(this.typeSelect, this.types, event.type);
    const flips = (message.flips || []).map((flip) =>
      el("span", { class: "chip chip-true" }, `⚑ ${flip.name} → ${JSON.stringify(flip.value)}`));
    const row = el("li", { id: `event-${seq}`, class: ["ev", `ev-${event.type}`, seq === this.selected && "target"], dataset: { seq: String(seq), agent: who, type: event.type } },
      el("a", { class: "ev-seq", href: `#event-${seq}` }, `#${seq}`),
      el("span", { class: "ev-type" }, event.type),
      who ? el("span", { class: "ev-agent" }, who) : null,
      body(event),
      flips.length ? el("div", { class: "ev-flips" }, flips) : null);
    row.hidden = !this.visible(row);
    return row;
  }

  visible(row) {
    const agent = this.agentSelect.value;
    const type = this.typeSelect.value;
    return (!agent || row.dataset.agent === agent) && (!type || row.dataset.type === type);
  }

  applyFilters({ user = false } = {}) {
    for (const row of this.list.children) row.hidden = !this.visible(row);
    this.updateNoMatch();
    if (user) this.onFilter({ agent: this.agentSelect.value, type: this.typeSelect.value });
  }

  /** Set the filters (from the URL): an agent not seen yet gets its option now. */
  setFilters({ agent, type }) {
    if (agent) this.addOption(this.agentSelect, this.agents, agent);
    if (type) this.addOption(this.typeSelect, this.types, type);
    this.agentSelect.value = agent || "";
    this.typeSelect.value = type || "";
    this.applyFilters();
  }

  /** Say so when events exist but the filters hide every one of them. */
  updateNoMatch() {
    if (!this.noMatch) return;
    const filtered = Boolean(this.agentSelect.value || this.typeSelect.value);
    const anyVisible = filtered ? [...this.list.children].some((row) => !row.hidden) : true;
    const hidden = !filtered || anyVisible || this.list.childElementCount === 0;
    if (hidden) { this.noMatch.hidden = true; return; }
    const what = [this.agentSelect.value && `agent ${this.agentSelect.value}`,
      this.typeSelect.value && `type ${this.typeSelect.value}`].filter(Boolean).join(" and ");
    replace(this.noMatch, `No event matches ${what}. `,
      el("button", { type: "button", class: "link-button", onclick: () => this.setFilters({}) || this.onFilter({ agent: "", type: "" }) },
        "Clear filters"));
    this.noMatch.hidden = false;
  }

  /** Highlight one event as the selected one (its row may arrive later). */
  highlight(seq) {
    this.selected = seq;
    for (const old of this.list.querySelectorAll(".target")) old.classList.remove("target");
    const row = document.getElementById(`event-${seq}`);
    if (row) row.classList.add("target");
    return row;
  }

  /** Select an event: highlight it and tell the page (which puts it in the URL). */
  select(seq) {
    this.highlight(seq);
    this.onSelect(seq);
  }

  /** Append what waits for the next frame now (before pausing, jumping or clearing). */
  flush() {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    const pending = this.pending;
    this.pending = [];
    if (pending.length) this.render(pending);
  }

  setPaused(paused) {
    this.flush();
    this.paused = paused;
    this.pauseButton.setAttribute("aria-pressed", String(paused));
    if (!paused && this.buffer.length) {
      const pending = this.buffer;
      this.buffer = [];
      this.render(pending);
      this.list.scrollTop = this.list.scrollHeight;
    }
    this.updatePauseLabel();
  }

  updatePauseLabel() {
    this.pauseButton.textContent = this.paused
      ? `Resume live${this.buffer.length ? ` (${this.buffer.length} new)` : ""}`
      : "Pause live";
  }

  atBottom() {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
  }

  /** Show one event: clear filters that hide it, scroll to it, and highlight it. */
  jumpTo(seq) {
    this.flush();
    if (this.paused && this.buffer.some((message) => message.seq === seq)) this.setPaused(false);
    const row = document.getElementById(`event-${seq}`);
    if (!row) return false;
    if (row.hidden) {
      this.agentSelect.value = "";
      this.typeSelect.value = "";
      this.applyFilters({ user: true });
    }
    this.select(seq);
    row.scrollIntoView({ block: "center", behavior: "smooth" });
    return true;
  }

  clear() {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.pending = [];
    replace(this.list);
    this.buffer = [];
    this.empty.hidden = false;
  }
}
