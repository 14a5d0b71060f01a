// The run page's "outdated: version M is published" badge, kept current: the version a run
// pinned never changes, but a newer one may be published while the page is open. The server
// decides (GET data-version-url); this only shows its answer.
import { el } from "./dom.js";

const POLL_MS = 30_000;

export function badgeShow(holder, version) {
  const old = holder.querySelector("#run-outdated");
  if (!version.outdated) {
    old?.remove();
    return;
  }
  const text = version.outdated_text; // the server says which version ran and which is published
  if (old) {
    old.textContent = text;
    return;
  }
  holder.append(" ", el("span", {
    class: "pill outdated",
    id: "run-outdated",
    title: `the run keeps the definitions it started with; new runs get version ${version.published}`,
  }, text));
}

export function versionWatch(holder) {
  const url = holder?.dataset.versionUrl;
  if (!url || !holder.querySelector("#run-version-link")) return; // unversioned: nothing to compare
  let busy = false;
  const check = async () => {
    if (busy || document.visibilityState !== "visible") return;
    busy = true;
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (response.ok) badgeShow(holder, await response.json());
    } catch {
      // offline for a moment: the next check tries again
    } finally {
      busy = false;
    }
  };
  document.addEventListener("visibilitychange", check);
  window.setInterval(check, POLL_MS);
}

versionWatch(document.getElementById("run-version"));
