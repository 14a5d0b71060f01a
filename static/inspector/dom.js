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
  const response = await fetch(target, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  let data = null;
  try { data = await response.json(); } catch { /* not JSON: a proxy page or a crash */ }
  if (!response.ok) throw new Error((data && data.error) || `${response.status} ${response.statusText}`);
  return data;
}

/** Call fn at most once per `ms`, with the latest arguments. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
