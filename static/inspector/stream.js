// The event stream: newest at the bottom, filters by agent and type, pause that buffers.

import { clipped, el, replace, show } from "./dom.js";
import { passedNote } from "./passed_over.js";
import { rovingList } from "./roving.js";

// The list keeps the newest MAX_ROWS rows (older ones leave the page, and the page says so:
// time travel and the JSONL download still reach every event). Rendering cost grows with the
// rows a list holds, so a short list is what lets a fast run (1,000 events/s) keep 60 Hz.
export const MAX_ROWS = 500;
// A fast run: the list catches up at most every LIST_EVERY_MS (the newest rows together), not
// every frame; a slow one gets each event at the next frame as before.
const LIST_EVERY_MS = 100;

/** The sender the server normalised (message.agent); else the event's own agent if a string. */
export function senderOf(message) {
  if (typeof message.agent === "string") return message.agent;
  return typeof message.event?.agent === "string" ? message.event.agent : "";
}

/** An event's text in the list (also the run page's list of all its warnings). */
export function eventBody(event) {
  switch (event.type) {
    case "agent_text":
      return el("div", { class: "ev-text" }, clipped(String(event.text ?? "")));
    case "tool_response":
      return el("div", { class: "ev-text" },
        el("code", {}, event.tool), event.status ? ` → ${event.status}` : "",
        event.data !== undefined ? el("pre", { class: "ev-data" }, clipped(JSON.stringify(event.data, null, 1))) : null);
    case "context_set":
      return el("div", { class: "ev-text" }, el("code", {}, event.name), " = ", clipped(show(event.value)),
        event.tool ? el("span", { class: "muted" }, ` (set by tool ${event.tool})`) : null);
    case "warning": // a change the run refused: shown, counted, never dropped silently
      return el("div", { class: ["ev-text", "ev-warning"] }, "⚠ refused ",
        ...(event.rule === "deleted" ? ["deleting ", el("code", {}, event.name)]
          : [el("code", {}, event.name), " = ", clipped(show(event.value))]),
        event.tool ? ` by tool ${event.tool}` : "",
        el("span", { class: "pill warning-rule" }, String(event.rule ?? "")),
        event.text ? el("div", { class: "muted" }, clipped(String(event.text))) : null);
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
  /** types: the event types the server accepts (contextadmin_sdk.engine.EVENT_TYPES), for the type filter. */
  constructor({ list, empty, noMatch, capped, agentSelect, typeSelect, pauseButton, types, onFilter, onSelect, onRender }) {
    this.list = list;
    this.empty = empty;
    this.noMatch = noMatch; // says so when the filters hide every event
    this.capped = capped; // says so when older events left the list, and where they still are
    this.dropped = 0; // events that left the list (or never entered it) because of MAX_ROWS
    this.onFilter = onFilter || (() => {});
    this.onSelect = onSelect || (() => {});
    this.onRender = onRender || (() => {}); // after rows were appended (the page's warnings line)
    this.selected = null;
    this.scrollPending = null;
    this.pending = []; // messages waiting for the next append (at most MAX_ROWS of them)
    this.frame = null;
    this.timer = null;
    this.lastAppend = -Infinity;
    this.agentSelect = agentSelect;
    this.typeSelect = typeSelect;
    this.pauseButton = pauseButton;
    this.paused = false;
    this.buffer = []; // while paused: the newest MAX_ROWS messages
    this.buffered = 0; // how many arrived while paused
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
    // one tab stop for the list: the selected event's link, the last one focused, or the newest
    this.keys = rovingList(list, {
      selector: "a.ev-seq",
      preferred: () => document.getElementById(`event-${this.selected}`)?.querySelector("a.ev-seq"),
    });
  }

  addOption(select, seen, value) {
    if (!value || seen.has(value)) return;
    seen.add(value);
    select.append(el("option", { value }, value));
  }

  /** Take one `event` message (already deduped and in order). Rows are appended in a frame,
   * together, at most every LIST_EVERY_MS: a fast run costs ten list layouts a second, not one
   * per event, and never builds a row the list would drop at once. */
  add(message) {
    if (this.paused) {
      this.buffered += 1;
      if (this.buffer.push(message) > MAX_ROWS) this.buffer.shift();
      this.updatePauseLabel();
      return;
    }
    if (this.pending.push(message) > MAX_ROWS) {
      this.pending.shift();
      this.dropped += 1;
    }
    this.schedule();
  }

  schedule() {
    if (this.frame !== null || this.timer !== null) return;
    const append = () => {
      this.timer = null;
      this.frame = requestAnimationFrame(() => {
        this.frame = null;
        const pending = this.pending;
        this.pending = [];
        this.render(pending);
      });
    };
    const wait = this.lastAppend + LIST_EVERY_MS - performance.now();
    if (wait <= 0) append();
    else this.timer = setTimeout(append, wait);
  }

  /** Stop a scheduled append (flush and clear take what waits themselves). */
  unschedule() {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    clearTimeout(this.timer);
    this.frame = null;
    this.timer = null;
  }

  render(messages) {
    this.lastAppend = performance.now();
    const stick = this.stuck; // kept by the scroll listener: no layout read before the append
    const filter = { agent: this.agentSelect.value, type: this.typeSelect.value };
    const fragment = document.createDocumentFragment();
    for (const message of messages) fragment.append(this.row(message, filter));
    this.list.append(fragment);
    for (let extra = this.list.childElementCount - MAX_ROWS; extra > 0; extra -= 1) {
      this.list.firstElementChild.remove();
      this.dropped += 1;
    }
    this.empty.hidden = this.list.childElementCount > 0;
    this.updateNoMatch();
    this.updateCapped();
    this.keys.refresh();
    this.onRender();
    if (stick) this.list.scrollTop = this.list.scrollHeight;
    if (this.scrollPending !== null) { // the selected event from the URL, once it arrives
      const row = document.getElementById(`event-${this.scrollPending}`);
      if (row) { this.scrollPending = null; row.scrollIntoView({ block: "center" }); }
    }
  }

  row(message, filter) {
    const { seq, event } = message;
    const who = senderOf(message) || event.tool || "";
    this.addOption(this.agentSelect, this.agents, who);
    this.addOption(this.typeSelect, this.types, event.type);
    const flips = (message.flips || []).map((flip) =>
      el("span", { class: "chip chip-true" }, `⚑ ${flip.name} → ${JSON.stringify(flip.value)}`));
    for (const write of message.outputs || []) { // seed 004: what the tool's output mappings did
      flips.push(write.written
        ? el("span", { class: "chip chip-value" }, `${write.to} ← data.${write.field}`)
        : el("span", { class: "chip chip-false", title: write.reason }, `${write.to} not written`));
    }
    const row = el("li", { id: `event-${seq}`, class: ["ev", `ev-${event.type}`, seq === this.selected && "target"], dataset: { seq: String(seq), agent: who, type: event.type } },
      el("a", { class: "ev-seq", href: `#event-${seq}`, tabindex: "-1" }, `#${seq}`),
      el("span", { class: "ev-type" }, event.type),
      who ? el("span", { class: "ev-agent" }, who) : null,
      eventBody(event),
      message.passed?.length ? passedNote(message.passed) : null, // rules that held, not taken here
      flips.length ? el("div", { class: "ev-flips" }, flips) : null);
    row.hidden = !this.visible(row, filter);
    return row;
  }

  visible(row, { agent, type } = { agent: this.agentSelect.value, type: this.typeSelect.value }) {
    return (!agent || row.dataset.agent === agent) && (!type || row.dataset.type === type);
  }

  applyFilters({ user = false } = {}) {
    for (const row of this.list.children) row.hidden = !this.visible(row);
    this.keys.refresh();
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
    // once earlier events left the list, the run may well have some: say where they are
    const held = this.list.childElementCount.toLocaleString("en-US");
    replace(this.noMatch, this.dropped
      ? `No event among the last ${held} matches ${what}: earlier events left the list (time travel reaches them). `
      : `No event matches ${what}. `,
      el("button", { type: "button", class: "link-button", onclick: () => this.setFilters({}) || this.onFilter({ agent: "", type: "" }) },
        "Clear filters"));
    this.noMatch.hidden = false;
  }

  /** Say so once events left the list: which ones it still shows, and where the rest are. */
  updateCapped() {
    if (!this.capped || !this.dropped) return;
    const first = this.list.firstElementChild?.dataset.seq;
    const text = `Showing the last ${this.list.childElementCount} events, from #${first}: earlier ones left `
      + "the list to keep the page fast. Time travel reaches every event; ";
    const lead = this.capped.firstChild;
    if (lead && lead.nodeType === Node.TEXT_NODE) {
      if (lead.data !== text) lead.data = text;
    } else {
      const download = document.getElementById("download");
      replace(this.capped, text, el("a", {
        href: download.getAttribute("href"), download: download.getAttribute("download"), id: "stream-download",
      }, "download all events (JSONL)"), ".");
    }
    if (this.capped.hidden) {
      this.capped.hidden = false;
      for (const note of document.querySelectorAll("[data-hide-when-capped]")) note.hidden = true;
    }
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
    this.unschedule();
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
      this.dropped += this.buffered - pending.length; // arrived while paused, past the cap
      this.buffer = [];
      this.buffered = 0;
      this.render(pending);
      this.list.scrollTop = this.list.scrollHeight;
    }
    this.updatePauseLabel();
  }

  updatePauseLabel() {
    const text = this.paused
      ? `Resume live${this.buffered ? ` (${this.buffered} new)` : ""}`
      : "Pause live";
    if (this.pauseButton.textContent !== text) this.pauseButton.textContent = text;
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
    this.unschedule();
    this.pending = [];
    replace(this.list);
    this.buffer = [];
    this.buffered = 0;
    this.empty.hidden = false;
  }
}
