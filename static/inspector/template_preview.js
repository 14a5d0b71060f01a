// The run page's template preview: the server resolves a template against the state the page
// shows (live, or the seq time travel shows); unresolved references are marked where they stand.

import { debounce, el, getJSON, replace } from "./dom.js";

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

/** Wire the preview's inputs; `at()` is the seq shown (null: live). Returns its debounced
 * re-resolve, for when the state shown changes. */
export function templatePreview({ url, at }) {
  let token = 0;
  async function resolveTemplate() {
    const template = $("template-input").value;
    const mine = ++token;
    if (!template) {
      replace($("template-output"));
      replace($("template-unresolved"));
      $("template-at").textContent = "";
      return;
    }
    try {
      const data = await getJSON(url, { template, syntax: $("template-syntax").value, at: at() });
      if (mine !== token) return;
      $("template-output").classList.remove("error");
      replace($("template-output"), highlight(data.text, data.unresolved, data.syntax));
      replace($("template-unresolved"), data.unresolved.length
        ? ["Unresolved: ", data.unresolved.map((ref, index) => [index ? ", " : "", el("code", {}, ref)])]
        : el("span", { class: "ok" }, "Every reference resolved."));
      $("template-at").textContent = `resolved against the state after #${data.seq} (${data.syntax === "ref" ? "{{ref}}" : "{name}"})`;
    } catch (error) {
      if (mine !== token) return;
      $("template-output").classList.add("error");
      replace($("template-output"), error.message);
      replace($("template-unresolved"));
    }
  }
  const resolveSoon = debounce(resolveTemplate, 250);
  $("template-input").addEventListener("input", resolveSoon);
  $("template-syntax").addEventListener("change", resolveTemplate);
  return resolveSoon;
}
