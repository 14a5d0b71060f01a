// The run page's template preview: the server resolves a template against the state the page
// shows (live, or the seq time travel shows); unresolved references are marked where they stand.

import { debounce, el, getJSON, replace, throttle } from "./dom.js";

const $ = (id) => document.getElementById(id);
const PATTERNS = { ref: /\{\{\s*([^{}]+?)\s*\}\}/g, system: /\{([^{}]*)\}/g };

function highlight(text, unresolved, syntax) {
  const missing = new Set(unresolved);
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(PATTERNS[syntax])) {
    const key = syntax === "ref" ? match[1].trim() : match[1];
    if (!missing.has(key)) continue;
    parts.push(text.slice(last, match.index), el("mark", { class: "unresolved", title: "unresolved" }, match[0]));
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

/** Wire the preview's inputs; `at()` is the seq asked for (null: live), `shown()` the seq the
 * page shows. Returns `resolveSoon` (the inputs or the travelled-to state changed) and
 * `followLive` (the live state moved: at most once a second, for a streaming run). The same
 * template against the same state is not asked again. */
export function templatePreview({ url, at, shown }) {
  let token = 0;
  let asked = null; // what the shown answer was asked for
  async function resolveTemplate() {
    const template = $("template-input").value;
    const query = { template, syntax: $("template-syntax").value, at: at() };
    const key = JSON.stringify([query, shown()]);
    if (key === asked) return;
    asked = key;
    const mine = ++token;
    if (!template) {
      replace($("template-output"));
      replace($("template-unresolved"));
      $("template-at").textContent = "";
      return;
    }
    try {
      const data = await getJSON(url, query);
      if (mine !== token) return;
      $("template-output").classList.remove("error");
      replace($("template-output"), highlight(data.text, data.unresolved, data.syntax));
      replace($("template-unresolved"), data.unresolved.length
        ? ["Unresolved: ", data.unresolved.map((ref, index) => [index ? ", " : "", el("code", {}, ref)])]
        : el("span", { class: "ok" }, "Every reference resolved."));
      $("template-at").textContent = `resolved against the state after #${data.seq} (${data.syntax === "ref" ? "{{ref}}" : "{name}"})`;
    } catch (error) {
      if (mine !== token) return;
      asked = null; // asked again on the next change, not answered by this error
      $("template-output").classList.add("error");
      replace($("template-output"), error.message);
      replace($("template-unresolved"));
    }
  }
  const resolveSoon = debounce(resolveTemplate, 250);
  $("template-input").addEventListener("input", resolveSoon);
  $("template-syntax").addEventListener("change", resolveTemplate);
  return { resolveSoon, followLive: throttle(resolveTemplate, 1000) };
}
