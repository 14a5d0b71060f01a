// DOM helpers: every node is built with createElement/textContent, never innerHTML with data.

const SVG_NS = "http://www.w3.org/2000/svg";

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = String(value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  return node;
}

/** Build an HTML element: el("a", {href, class}, "text", childNode, [more]). */
export function el(tag, attrs, ...children) {
  return append(setAttrs(document.createElement(tag), attrs), children);
}

/** Build an SVG element (same arguments as el). */
export function svg(tag, attrs, ...children) {
  return append(setAttrs(document.createElementNS(SVG_NS, tag), attrs), children);
}

/** Replace a node's children. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** Rebuild part of a live page without losing a keyboard user's place: a link focused inside
 * `node` before `rebuild()` is focused again after it (the same href). The lists redraw every
 * few seconds and on every change, and focus fell back to the page's start each time. */
export function focusKept(node, rebuild) {
  const focused = document.activeElement;
  const href = focused && focused !== node && node.contains(focused) ? focused.getAttribute("href") : null;
  rebuild();
  if (href === null) return;
  const again = [...node.querySelectorAll("a[href]")].find((link) => link.getAttribute("href") === href);
  again?.focus({ preventScroll: true });
}

/** Set a node's text only when it differs (rewriting the same text still costs a layout). */
export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** Read the JSON a template rendered with json_script. */
export function jsonScript(id) {
  const node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : null;
}

/** A run id as lists show it: the first 12 characters, "…" when it goes on (the link's title
 * holds the whole id; ids are the runtime's to choose, up to 64 characters). */
export function shortId(id) {
  return id.length > 12 ? `${id.slice(0, 12)}…` : id;
}

// A text longer than CLIP_CHARS (or CLIP_LINES) shows its start and a button for the rest: a
// 100,000-character agent text or context value made its row tens of thousands of pixels tall.
export const CLIP_CHARS = 1000;
export const CLIP_LINES = 20;
const opened = new Set(); // the keys of clipped texts the reader opened (kept across redraws)

/** A text, clipped at `limit` characters with a "show all N characters" button (and back);
 * `key` keeps a text open across redraws of its panel (the context table's, say). */
export function clipped(text, { limit = CLIP_CHARS, lines = CLIP_LINES, key = null } = {}) {
  let cut = Math.min(limit, text.length);
  for (let at = -1, line = 0; line < lines; line += 1) { // no more than `lines` lines either
    at = text.indexOf("\n", at + 1);
    if (at < 0 || at >= cut) break;
    if (line === lines - 1) cut = at;
  }
  if (cut >= text.length) return text;
  const shown = el("span", { class: "clipped" });
  const toggle = el("button", { type: "button", class: "link-button clip-toggle" });
  const draw = (open) => {
    shown.textContent = open ? text : `${text.slice(0, cut)}…`;
    toggle.textContent = open ? "show less" : `show all ${text.length.toLocaleString("en-US")} characters`;
    toggle.setAttribute("aria-expanded", String(open));
  };
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    if (key !== null) {
      if (open) opened.add(key);
      else opened.delete(key);
    }
    draw(open);
  });
  draw(key !== null && opened.has(key));
  return [shown, " ", toggle];
}

/** Show a context value: strings as they are, everything else as compact JSON. */
export function show(value) {
  if (value === undefined) return "—";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Format an ISO timestamp as every page writes times: "2026-11-25 05:50:38 UTC" (the server's
 * templates use the same form, so a run reads the same on the list, its page and the front page). */
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "—" : `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** Fetch JSON; reject with the server's {"error"} message on a 4xx/5xx. */
export async function getJSON(url, params = {}) {
  const target = new URL(url, window.location.href);
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined) target.searchParams.set(key, value);
  }
  let response;
  try {
    response = await fetch(target, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  } catch {
    // the browser's own words ("Failed to fetch") say nothing to a reader
    throw new Error("the server could not be reached; try again in a moment");
  }
  let data = null;
  try { data = await response.json(); } catch { /* not JSON: a proxy page or a crash */ }
  if (!response.ok) throw new Error((data && data.error) || `${response.status} ${response.statusText}`);
  // a page instead of data: the login page a lost session is sent to, or a proxy's
  if (data === null) throw new Error(response.redirected ? "not logged in any more: reload the page to log in" : "the server sent no data");
  return data;
}

/** Call fn once calls have paused for `ms`, with the latest arguments (typing). */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** Call fn at most once per `ms`, with the latest arguments, and once more after the last
 * call (a stream: calls that never pause still get answered, at a bounded rate). */
export function throttle(fn, ms) {
  let timer = null;
  let ran = -Infinity;
  let latest = [];
  return (...args) => {
    latest = args;
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      ran = performance.now();
      fn(...latest);
    }, Math.max(0, ran + ms - performance.now()));
  };
}
