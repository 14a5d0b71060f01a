/* Long work started from the admin says so at once: Save, Check file, Apply import, Revert,
 * Approve and publish, and History's replay of recent runs (up to ~10 s).
 *
 * The page declares each one with a status element the server renders beside its control:
 *   <p class="contextadmin-busy" role="status" aria-live="polite"
 *      data-busy-for="ID of a form or a link" data-busy-text="Replaying … version 3…"></p>
 * The words come from the server (they name the workflow or the version); the region is in the
 * page from the start, so screen readers announce the text put into it.
 *
 * When the form is submitted (or the link followed) its controls are disabled at once, so a
 * second click or Enter posts nothing, and the text is shown. The browser's own navigation does
 * the request: Django's behaviour (redirects, a refused save re-rendered with everything typed)
 * is untouched. The page is usable again when it comes back from the back/forward cache (a
 * failed request shows the browser's error page; Back returns here), when the navigation API
 * reports the navigation stopped, and otherwise after a silence of data-busy-patience seconds
 * (60 by default): Chromium drops an aborted navigation (Esc, a cancelled request) without
 * telling the page, which must not stay disabled for good.
 */

// Words without server knowledge; those that name a version or a workflow come from the page.
const STOPPED = "Stopped before the server answered (the request was cancelled or the connection failed): you can try again.";
const SILENT = "No answer yet: the server may still be working, or the request was lost. You can wait, or try again.";
const PATIENCE_S = 60;
const ELAPSED_AFTER_S = 2;

const SUBMITS = "input[type=submit], input[type=image], button:not([type]), button[type=submit]";

/** Everything a status element watches, and what was changed to make its control busy. */
const entries = [];

function entryOf(target) {
  return entries.find((entry) => entry.target === target);
}

function submitControls(form) {
  return Array.from(form.elements).filter((element) => element.matches(SUBMITS));
}

function begin(entry, submitter) {
  entry.busy = true;
  const { target, status } = entry;
  if (target instanceof HTMLFormElement) {
    // A disabled submitter is left out of the posted data: carry its name (Django's "_continue",
    // "_addanother") in a hidden field, or "Save and continue editing" would act as "Save".
    if (submitter?.name) {
      entry.carry = document.createElement("input");
      entry.carry.type = "hidden";
      entry.carry.name = submitter.name;
      entry.carry.value = submitter.value;
      target.append(entry.carry);
    }
    entry.disabled = submitControls(target).filter((control) => !control.disabled);
    entry.disabled.forEach((control) => { control.disabled = true; });
    entry.marked = submitter || target;
  } else {
    // A link cannot be disabled: it says so, and clicks and Enter on it are refused below.
    target.setAttribute("aria-disabled", "true");
    entry.marked = target;
  }
  entry.marked.setAttribute("aria-busy", "true");
  status.classList.add("is-busy");
  status.textContent = status.dataset.busyText;
  // How long it has taken so far, for the eyes only: a live region ticking every second would
  // talk over everything else.
  const started = Date.now();
  entry.elapsed = document.createElement("span");
  entry.elapsed.className = "contextadmin-busy-elapsed";
  entry.elapsed.setAttribute("aria-hidden", "true");
  status.after(entry.elapsed);
  entry.ticker = window.setInterval(() => {
    const seconds = Math.floor((Date.now() - started) / 1000);
    if (seconds >= ELAPSED_AFTER_S) entry.elapsed.textContent = `${seconds} s`;
  }, 1000);
  const patience = Number(status.dataset.busyPatience) || PATIENCE_S;
  entry.watchdog = window.setTimeout(() => end(entry, SILENT), patience * 1000);
}

function end(entry, message) {
  if (!entry.busy) return;
  entry.busy = false;
  window.clearInterval(entry.ticker);
  window.clearTimeout(entry.watchdog);
  (entry.disabled || []).forEach((control) => { control.disabled = false; });
  entry.disabled = [];
  entry.carry?.remove();
  entry.carry = null;
  entry.elapsed?.remove();
  entry.marked?.removeAttribute("aria-busy");
  if (!(entry.target instanceof HTMLFormElement)) entry.target.removeAttribute("aria-disabled");
  entry.status.classList.remove("is-busy");
  entry.status.textContent = message;
}

function endAll(message) {
  entries.forEach((entry) => end(entry, message));
}

function onSubmit(event) {
  const entry = entryOf(event.target);
  if (!entry) return;
  if (entry.busy) {
    event.preventDefault(); // requestSubmit() or a second Enter: one post per click
    return;
  }
  if (event.defaultPrevented) return; // another script kept the form here: nothing is sent
  begin(entry, event.submitter);
}

function onClick(event) {
  const link = event.target instanceof Element ? event.target.closest("a[href]") : null;
  const entry = link && entryOf(link);
  if (!entry) return;
  if (entry.busy) {
    event.preventDefault();
    return;
  }
  // A new tab or window leaves this page as it is: nothing to wait for here.
  const elsewhere = event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey ||
    event.altKey || (link.target && link.target !== "_self");
  if (event.defaultPrevented || elsewhere) return;
  begin(entry, null);
}

function setUp() {
  document.querySelectorAll(".contextadmin-busy[data-busy-for]").forEach((status) => {
    const target = document.getElementById(status.dataset.busyFor);
    if (!target || !status.dataset.busyText || entryOf(target)) return;
    entries.push({ target, status, busy: false, disabled: [] });
  });
  if (!entries.length) return;
  // Bubbling to window: runs after the page's own handlers (nested_admin writes the rows'
  // positions on submit), so a submit one of them cancelled does not leave the page busy.
  window.addEventListener("submit", onSubmit);
  window.addEventListener("click", onClick);
  // Back to this page from the back/forward cache: its controls as they were before the click.
  window.addEventListener("pageshow", (event) => { if (event.persisted) endAll(""); });
  // Stopped (Esc, the stop button) or failed without an error page: the page is still here.
  window.navigation?.addEventListener("navigateerror", () => endAll(STOPPED));
}

setUp();
