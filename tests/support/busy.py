"""Watching long work say so (static/contextadmin/busy.js) in real Chromium: a Playwright route
holds requests until the test lets them go (``Held``), and nothing sleeps. While a navigation is
pending Chrome's DevTools holds back evaluations and Playwright's locators wait for it, so the
in-flight page reports itself: a probe logs the control's and its status region's state to the
console on every change (``watch``); the clicks and keys still reach the page."""

from __future__ import annotations

import json
from typing import Any

# Long enough for a second request to have left the page, were one sent.
SETTLE_MS = 400

PROBE = """([control, status]) => {
  const read = () => {
    const element = document.querySelector(control);
    const region = document.getElementById(status);
    return JSON.stringify({
      disabled: element.disabled === true || element.getAttribute("aria-disabled") === "true",
      busy: element.getAttribute("aria-busy"),
      text: region.textContent,
      live: [region.getAttribute("role"), region.getAttribute("aria-live")],
    });
  };
  new MutationObserver(() => console.log(`busy-probe ${read()}`)).observe(
    document.body, { subtree: true, childList: true, attributes: true, characterData: true });
}"""


class Held:
    """Holds the requests ``matches`` accepts (all others pass); counts every one seen."""

    def __init__(self, page: Any, matches: Any) -> None:
        self.seen: list[Any] = []
        self.waiting: list[Any] = []
        self.matches = matches
        page.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        if not self.matches(route.request):
            route.fallback()
            return
        self.seen.append(route.request)
        self.waiting.append(route)

    def arrived(self, page: Any) -> list[Any]:
        """The requests held now, once one is (the route sees a request a moment after the
        click sent it)."""
        for _ in range(50):
            if self.waiting:
                break
            page.wait_for_timeout(100)
        return self.waiting

    def release(self, page: Any) -> None:
        waiting = self.arrived(page)
        while waiting:
            waiting.pop(0).fallback()


def watch(page: Any, control: str, status: str) -> list[dict[str, Any]]:
    """The states the page reports from now on (the newest last)."""
    states: list[dict[str, Any]] = []
    page.on(
        "console",
        lambda message: (
            states.append(json.loads(message.text[len("busy-probe ") :]))
            if message.text.startswith("busy-probe ")
            else None
        ),
    )
    page.evaluate(PROBE, [control, status])
    return states


def busy_state(page: Any, states: list[dict[str, Any]]) -> dict[str, Any]:
    """The page's state once it says it is busy (or the last it reported, after 5 s)."""
    for _ in range(50):
        if states and states[-1]["text"]:
            break
        page.wait_for_timeout(100)
    return states[-1] if states else {}
