// Time travel and compare on the run page: the panels show the state after any seq (from the
// state API) while the event stream stays live; "compare" diffs the states after two seqs.

import { debounce, el, getJSON, replace, setText } from "./dom.js";
import { spacesOf } from "./run_model.js";
import { renderDiff } from "./travel.js";
import { writeState } from "./urlstate.js";

const $ = (id) => document.getElementById(id);

/** What the panels show: the live end (`live`), or `state` as of `seq`; `revision` is bumped
 * whenever that changes. */
export class RunView {
  constructor() {
    this.live = true;
    this.seq = null;
    this.state = null;
    this.revision = 0;
  }

  show({ live, seq, state }) {
    Object.assign(this, { live, seq, state });
    this.revision += 1;
  }
}

/** Wire the slider, "Back to live" and the compare form. `changed()` is called when the view
 * changes; `jump(seq)` shows an event. */
export function timeTravel({ url, model, view, initial, namespaces, outputNamespaces, jump, changed }) {
  // "Compare with #" follows the live end until the reader types another number
  let compareFollows = !initial.compare || initial.compare[1] === "live";
  let token = 0;
  // The reader moved the slider (a drag, its keys) and the view has not followed yet: the
  // renders of a streaming run leave the slider where the reader put it (they moved it back to
  // the live end, so each key press started again from there).
  let moving = false;
  let moves = 0; // the reader's slider inputs: an answer asked before the latest is stale

  function goLive() {
    token += 1;
    moving = false;
    view.show({ live: true, seq: null, state: null });
    writeState({ at: null });
    $("travel-live").setAttribute("aria-pressed", "true");
    $("travel-note").hidden = true;
    changed();
  }

  /** The slider, its output and the note, for the view at `seq` (of the run's events now). */
  function showAt(seq) {
    $("travel-seq").value = String(seq);
    setText($("travel-out"), `#${seq}`);
    const note = $("travel-note");
    const text = `Showing the state after event #${seq} of ${model.lastSeq}. The event stream stays live. `;
    const said = note.querySelector(".travel-text");
    if (said) setText(said, text); // at each render: the button keeps a reader's focus
    else {
      replace(note, el("span", { class: "travel-text" }, text),
        el("button", { type: "button", class: "link-button", onclick: goLive }, "Back to live"));
    }
    note.hidden = false;
  }

  async function travelTo(seq) {
    if (seq >= model.lastSeq) {
      goLive();
      return;
    }
    const mine = ++token;
    const asked = moves;
    $("travel-live").setAttribute("aria-pressed", "false");
    writeState({ at: seq });
    try {
      const data = await getJSON(url, { at: seq });
      // a newer request superseded this one, or the reader moved the slider since (keys held
      // down): its own request follows; this answer would put the slider back, losing keys
      if (mine !== token || asked !== moves) return;
      view.show({
        live: false,
        seq: data.seq,
        state: {
          context: data.state.context, provenance: data.provenance, flips: data.flips,
          execution: data.state.execution, resumes: data.resumes || [], readiness: data.handoffs ?? null,
          spaces: spacesOf(data.state, outputNamespaces), writes: data.writes || {},
        },
      });
      moving = false;
      showAt(data.seq);
      changed();
    } catch (error) {
      if (mine !== token || asked !== moves) return;
      moving = false;
      replace($("travel-note"), el("span", { class: "error" }, `Could not load #${seq}: ${error.message}`));
      $("travel-note").hidden = false;
    }
  }

  async function compare() {
    const clamp = (value) => Math.max(0, Math.min(model.lastSeq, Number(value) || 0));
    const [a, b] = [clamp($("compare-a").value), clamp($("compare-b").value)].sort((x, y) => x - y);
    writeState({ compare: [a, compareFollows && b === model.lastSeq ? "live" : b] });
    try {
      const [first, second] = await Promise.all([getJSON(url, { at: a }), getJSON(url, { at: b })]);
      renderDiff($("compare-result"), first, second, { onJump: jump, namespaces });
    } catch (error) {
      replace($("compare-result"), el("p", { class: "error" }, `Compare failed: ${error.message}`));
      $("compare-result").hidden = false;
    }
  }

  /** Keep the slider and the compare inputs in step with the live end (at each render). */
  function follow() {
    const slider = $("travel-seq");
    slider.max = String(model.lastSeq);
    if (moving) {
      // the reader's value stands until its state arrives
    } else if (view.live) {
      slider.value = String(model.lastSeq);
      setText($("travel-out"), `#${model.lastSeq}`);
    } else if (view.seq !== null) {
      showAt(view.seq); // "of N" grows with the run
    }
    $("compare-b").max = $("compare-a").max = String(model.lastSeq);
    if (compareFollows) $("compare-b").value = String(model.lastSeq);
  }

  /** Show the view the URL named (once the page has caught up to the run). */
  function restore({ at, compare: pair }) {
    if (pair) {
      const [a, b] = pair;
      $("compare-a").value = String(a);
      $("compare-b").value = String(b === "live" ? model.lastSeq : b);
      compare();
    }
    if (at !== null && at < model.lastSeq) {
      $("travel-seq").value = String(at);
      $("travel-out").textContent = `#${at}`;
      travelTo(at);
    }
  }

  const travelSoon = debounce((seq) => travelTo(seq), 150);
  $("travel-seq").addEventListener("input", (event) => {
    const seq = Number(event.target.value);
    moving = true;
    moves += 1;
    $("travel-out").textContent = `#${seq}`;
    // the right end (End, a drag all the way) is the live end, however many events came since
    travelSoon(seq >= Number(event.target.max) ? Infinity : seq);
  });
  $("travel-live").addEventListener("click", goLive);
  $("compare-b").addEventListener("input", () => {
    compareFollows = Number($("compare-b").value) === model.lastSeq;
  });
  $("compare").addEventListener("submit", (event) => {
    event.preventDefault();
    compare();
  });
  return { goLive, travelTo, follow, restore };
}
