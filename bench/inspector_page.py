"""The run page keeps up with a fast run (issue 17, item 11): Chromium (Debian's, headless,
Playwright) shows a run while it streams N events/s into a real Daphne, and the page's own
frame timeline is measured.

``python -m bench.inspector_page [--rates 10,1000] [--seconds 60]``

For each rate: a fresh run, its page opened by a staff session, then the events posted in
batches every 10 ms (``POST /api/runs/<id>/events/``, one keep-alive connection) for the given
time. In the page a ``requestAnimationFrame`` loop records every frame's duration and a
``PerformanceObserver`` the long tasks (> 50 ms). Reported: frame time p50 / p95 / max, long
tasks, the events the server took and the page showed, the rows the event list holds (capped)
and the JS heap. The page is responsive when p95 frame time <= 16 ms (60 Hz: one frame
interval, 16.7 ms, is the floor a requestAnimationFrame loop can measure). What keeps it there
(static/inspector/): the event list keeps at most 500 rows and appends the newest together at
most every 100 ms (stream.js), the panels redraw at most every 250 ms and only what changed
(run.js ``schedule``), and the connection's "last event #N" tooltip is written a few times a
second, not per event (socket.js).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from contextadmin_sdk.client import RunReporter
from playwright.sync_api import sync_playwright

from bench.servers import daphnes, prepare_site
from devservers.browser import CHROMIUM, CHROMIUM_ARGS

FRAME_RECORDER = """() => {
  window.__bench = { frames: [], longTasks: 0 };
  let last = performance.now();
  const tick = (now) => { window.__bench.frames.push(now - last); last = now;
                          if (!window.__bench.stop) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  try {
    new PerformanceObserver((list) => { window.__bench.longTasks += list.getEntries().length; })
      .observe({ type: "longtask", buffered: false });
  } catch (error) { window.__bench.longTasks = null; }
}"""


@dataclass
class PageFigure:
    rate: int
    seconds: float
    sent: int
    shown_seq: int
    rows: int
    frames: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    long_tasks: int | None
    heap_mb: float | None

    def line(self) -> str:
        return (
            f"{self.rate:>5} events/s for {self.seconds:.0f} s: {self.sent} sent "
            f"({self.sent / self.seconds:.0f}/s achieved), page at #{self.shown_seq}, "
            f"{self.rows} rows kept; frames {self.frames}: p50 {self.p50_ms:.1f} ms, "
            f"p95 {self.p95_ms:.1f} ms, max {self.max_ms:.1f} ms; long tasks {self.long_tasks}; "
            f"JS heap {self.heap_mb if self.heap_mb is None else round(self.heap_mb, 1)} MB"
        )


def post_events(url: str, token: str, run_id: str, *, rate: int, seconds: float) -> int:
    """Post ``rate`` events/s for ``seconds`` in 10 ms batches; return how many were stored."""
    target = urlparse(url)
    connection = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    per_tick = max(1, rate // 100)
    tick = per_tick / rate  # 10 ms at 100+ events/s; one event per tick below
    sent, seq = 0, 0
    start = time.monotonic()
    next_at = start
    while time.monotonic() - start < seconds:
        events = []
        for _ in range(per_tick):
            seq += 1
            agent = ("InterviewAgent", "ContextVariablesAgent", "user")[seq % 3]
            events.append({"type": "agent_text", "agent": agent, "text": f"message {seq}",
                           "seq": seq})
        connection.request("POST", f"/api/runs/{run_id}/events/",
                           body=json.dumps({"events": events}), headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"ingest answered {response.status}")
        sent += len(events)
        next_at += tick
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    connection.close()
    return sent


def measure(page, site, url: str, *, rate: int, seconds: float) -> PageFigure:
    reporter = RunReporter(url, site.token)
    run_id = reporter.start(workflow="Generator", enterprise_id=f"bench-{rate}")
    page.goto(f"{url}/runs/{run_id}/")
    page.wait_for_selector('#conn[data-state="live"]')
    page.evaluate(FRAME_RECORDER)
    sent_box: list[int] = []
    producer = threading.Thread(
        target=lambda: sent_box.append(
            post_events(url, site.token, run_id, rate=rate, seconds=seconds)
        )
    )
    started = time.monotonic()
    producer.start()
    producer.join()
    elapsed = time.monotonic() - started
    sent = sent_box[0]
    page.wait_for_function(f"Number(document.getElementById('run-seq').textContent) >= {sent}",
                           timeout=60_000)
    data = page.evaluate("""() => { window.__bench.stop = true; return {
        frames: window.__bench.frames.slice(1), longTasks: window.__bench.longTasks,
        rows: document.querySelectorAll('#stream > li').length,
        seq: Number(document.getElementById('run-seq').textContent),
        heap: performance.memory ? performance.memory.usedJSHeapSize : null }; }""")
    frames = sorted(data["frames"])
    p95 = frames[int(0.95 * (len(frames) - 1))] if frames else float("nan")
    return PageFigure(
        rate=rate, seconds=elapsed, sent=sent, shown_seq=data["seq"], rows=data["rows"],
        frames=len(frames), p50_ms=statistics.median(frames) if frames else float("nan"),
        p95_ms=p95, max_ms=frames[-1] if frames else float("nan"),
        long_tasks=data["longTasks"],
        heap_mb=data["heap"] / 1e6 if data["heap"] is not None else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="10,1000", help="events per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    rates = [int(rate) for rate in args.rates.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-inspector-") as tmp:
        site = prepare_site(Path(tmp))
        with daphnes(site, 1) as servers, sync_playwright() as playwright:
            url = servers[0].url
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-precise-memory-info"]
            )
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            host = urlparse(url).hostname
            context.add_cookies([{"name": "sessionid", "value": site.session, "domain": host,
                                  "path": "/"}])
            page = context.new_page()
            for rate in rates:
                print(measure(page, site, url, rate=rate, seconds=args.seconds).line(), flush=True)
            browser.close()


if __name__ == "__main__":
    main()
