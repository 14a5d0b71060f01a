// One tab stop for a long list: Tab enters the list once and leaves it with the next Tab; the
// arrow keys, Home and End move between its rows (WAI-ARIA's roving tabindex). A run's events
// list holds up to 500 rows, each with its "#N" link: without this, a keyboard reader pressed
// Tab 500 times to get past it.

const KEYS = new Set(["ArrowDown", "ArrowUp", "Home", "End"]);

/** Rove focus over the `selector` items of `list`'s visible rows (its children); new items are
 * built with tabindex -1, and `refresh()` after every change of rows or filters keeps exactly
 * one of them reachable by Tab: the one the reader last focused, else `preferred()`, else the
 * newest (which moves as rows arrive, until the reader picks one). */
export function rovingList(list, { selector, preferred = () => null }) {
  let current = null;
  let picked = false; // the reader focused `current`: rows arriving do not move it

  const visibleItems = () => [...list.children]
    .filter((row) => !row.hidden)
    .map((row) => row.querySelector(selector))
    .filter(Boolean);

  function make(item) {
    if (current === item) return;
    if (current) current.tabIndex = -1;
    current = item;
    if (current) current.tabIndex = 0;
  }

  function refresh() {
    if (picked && current && current.isConnected && !current.closest("li").hidden) return;
    picked = false;
    const wanted = preferred();
    make(wanted && !wanted.closest("li").hidden ? wanted : newest());
  }

  /** The newest visible row's item, looked for from the end (a refresh runs on every append). */
  function newest() {
    for (let row = list.lastElementChild; row; row = row.previousElementSibling) {
      const item = !row.hidden && row.querySelector(selector);
      if (item) return item;
    }
    return null;
  }

  list.addEventListener("focusin", (event) => {
    if (!event.target.matches(selector)) return;
    make(event.target);
    picked = true;
  });
  list.addEventListener("keydown", (event) => {
    if (!KEYS.has(event.key) || !event.target.matches(selector)) return;
    const items = visibleItems();
    const at = items.indexOf(event.target);
    const next = {
      ArrowDown: items[Math.min(at + 1, items.length - 1)],
      ArrowUp: items[Math.max(at - 1, 0)],
      Home: items[0],
      End: items.at(-1),
    }[event.key];
    event.preventDefault(); // the list would scroll instead
    if (!next) return;
    make(next);
    next.focus();
  });

  return { refresh };
}
