// The events list's line about warnings, while it shows them (type filter "warning"): how many
// of the run's warnings the list holds (it keeps the last MAX_ROWS events) out of the header's
// count, and a button that loads all of them (the server's latest WARNINGS_SHOWN) into a list
// of their own, each linking to its event (or, once it left the events list, the state after it).

import { el, getJSON, replace } from "./dom.js";
import { eventBody, MAX_ROWS } from "./stream.js";

function count(n, what = "warning") {
  return `${n.toLocaleString("en-US")} ${what}${n === 1 ? "" : "s"}`;
}

/**
 * box: the line's element; list: the events list; url: the warnings endpoint, which lists the
 * latest `limit`; total(): the header's count; typeSelect: the type filter; onShow(seq): show
 * that warning's event.
 */
export function warningsNotice({ box, list, url, limit, total, typeSelect, onShow }) {
  let loaded = null; // the server's answer once "show all" was pressed: { total, limit, warnings }
  let loading = false;
  let said = null; // what the line says now, so an unchanged line is not rebuilt at each render

  async function load() {
    loading = true;
    update();
    try {
      loaded = await getJSON(url);
    } catch (error) {
      loaded = { error: error.message };
    }
    loading = false;
    said = null;
    update();
  }

  function hide() {
    loaded = null;
    said = null;
    update();
  }

  function loadedList() {
    if (loaded.error) return el("p", { class: "warning" }, `The warnings could not be loaded: ${loaded.error}`);
    return el("ol", { class: "stream warnings-all", id: "warnings-all" }, loaded.warnings.map(({ seq, agent, event }) =>
      el("li", { class: ["ev", "ev-warning"], dataset: { seq: String(seq), type: "warning" } },
        el("a", {
          class: "ev-seq", href: `#event-${seq}`, title: "this event, or the state after it once the list no longer holds it",
          onclick: (click) => { click.preventDefault(); onShow(seq); },
        }, `#${seq}`),
        el("span", { class: "ev-type" }, "warning"),
        agent ? el("span", { class: "ev-agent" }, agent) : null,
        eventBody(event))));
  }

  /** Say it again: after each render of the page's panels and each change of the filters. */
  function update() {
    const all = total();
    if (typeSelect.value !== "warning" || (!all && !loaded)) {
      box.hidden = true;
      return;
    }
    const held = list.querySelectorAll('li[data-type="warning"]').length;
    const key = JSON.stringify([all, held, loading, loaded && loaded.warnings?.length]);
    box.hidden = false;
    if (key === said) return;
    said = key;
    box.dataset.held = String(held);
    box.dataset.total = String(all);
    let says;
    if (loaded && !loaded.error) {
      const shown = loaded.warnings.length;
      const newer = all - loaded.total;
      says = [shown < loaded.total
        ? `The latest ${count(shown)} of ${loaded.total.toLocaleString("en-US")}, from the server (it lists at most `
          + `${loaded.limit.toLocaleString("en-US")}; the JSONL download has every one). `
        : `All ${count(shown)} of the run, from the server. `,
      newer > 0 ? [`${count(newer)} more since: `,
        el("button", { type: "button", class: "link-button", onclick: load, disabled: loading }, "load again"), " · "] : null,
      el("button", { type: "button", class: "link-button", onclick: hide }, "Hide them")];
    } else if (held >= all) {
      says = `Showing all ${count(all)} of the run.`;
    } else {
      says = [`Showing the latest ${held.toLocaleString("en-US")} of ${count(all)}: the list keeps the last `
        + `${MAX_ROWS} events. `,
      el("button", { type: "button", class: "link-button", id: "warnings-load", onclick: load, disabled: loading },
        loading ? "Loading…" : all > limit ? `Show the latest ${limit.toLocaleString("en-US")}` : `Show all ${count(all)}`)];
    }
    replace(box, el("p", { class: "muted", id: "stream-warnings-line" }, says), loaded ? loadedList() : null);
  }

  return { update };
}
