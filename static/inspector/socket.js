// A websocket that reconnects with exponential backoff. A *sequenced* socket also resumes
// with ?after=<last seq>, drops duplicates, and resyncs when a seq jumps ahead of last + 1.

const FINAL_CLOSE_CODES = new Map([
  [4400, "the server refused the request"],
  [4401, "session ended: reload the page to log in"],
  [4403, "not allowed: log in as a staff user"],
  [4404, "the run no longer exists (deleted)"],
]);

export class LiveSocket {
  /**
   * @param {string} path  e.g. "/ws/runs/<id>/"
   * @param {object} options  sequenced, after, onMessage(msg), onStatus(state, detail),
   *                          minDelay, maxDelay (ms), heartbeat (ms; sequenced sockets only)
   */
  constructor(path, options = {}) {
    this.path = path;
    this.sequenced = Boolean(options.sequenced);
    this.lastSeq = options.after ?? 0;
    this.onMessage = options.onMessage || (() => {});
    this.onStatus = options.onStatus || (() => {});
    this.minDelay = options.minDelay ?? 500;
    this.maxDelay = options.maxDelay ?? 15000;
    this.heartbeat = options.heartbeat ?? 20000;
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
    this.pingTimer = null;
    this.lastHeard = 0;
    this.stopped = false;
    this.stats = { connects: 0, drops: 0, duplicates: 0, resyncs: 0 };
    window.addEventListener("online", () => this.ws || this.reconnectNow());
  }

  url() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const query = this.sequenced ? `?after=${this.lastSeq}` : "";
    return `${scheme}//${window.location.host}${this.path}${query}`;
  }

  start() {
    this.stopped = false;
    this.connect();
    return this;
  }

  connect() {
    clearTimeout(this.timer);
    this.onStatus(this.attempt ? "reconnecting" : "connecting", { attempt: this.attempt });
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (ws !== this.ws) return;
      this.attempt = 0;
      this.stats.connects += 1;
      this.lastHeard = Date.now();
      this.onStatus("live", { seq: this.lastSeq });
      this.startHeartbeat();
    });
    ws.addEventListener("message", (event) => {
      if (ws !== this.ws) return; // a late message from a socket we already gave up on
      this.lastHeard = Date.now();
      let message;
      try { message = JSON.parse(event.data); } catch { return; }
      this.receive(message);
    });
    ws.addEventListener("close", (event) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.stopHeartbeat();
      if (this.stopped) return;
      const final = FINAL_CLOSE_CODES.get(event.code);
      if (final) {
        this.stopped = true;
        this.onStatus("closed", { reason: final, code: event.code });
        return;
      }
      this.stats.drops += 1;
      this.scheduleReconnect();
    });
  }

  /** Take one parsed message: dedupe by seq and resync on a gap (sequenced sockets). */
  receive(message) {
    if (!this.sequenced || typeof message.seq !== "number") {
      this.onMessage(message);
      return;
    }
    if (message.type === "snapshot") {
      this.lastSeq = message.seq;
      this.onMessage(message);
      return;
    }
    if (message.type !== "event") {
      this.onMessage(message);
      return;
    }
    if (message.seq <= this.lastSeq) {
      this.stats.duplicates += 1;
      return;
    }
    if (message.seq > this.lastSeq + 1) {
      this.resync();
      return;
    }
    this.lastSeq = message.seq;
    this.onMessage(message);
    this.onStatus("live", { seq: this.lastSeq });
  }

  /** Reconnect at once with after=<last seq>: the server re-sends what we missed. */
  resync() {
    this.stats.resyncs += 1;
    this.reconnectNow();
  }

  reconnectNow() {
    const old = this.ws;
    this.ws = null;
    this.stopHeartbeat();
    if (old) old.close(1000, "resync");
    if (!this.stopped) this.connect();
  }

  scheduleReconnect() {
    const base = Math.min(this.maxDelay, this.minDelay * 2 ** this.attempt);
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.attempt += 1;
    this.onStatus("offline", { attempt: this.attempt, delay });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  startHeartbeat() {
    this.stopHeartbeat();
    if (!this.sequenced || !this.heartbeat) return;
    this.pingTimer = setInterval(() => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
      if (Date.now() - this.lastHeard > this.heartbeat * 2.5) {
        this.drop(); // silent for too long: the connection is dead even if not yet closed
        return;
      }
      this.ws.send(JSON.stringify({ type: "ping" }));
    }, this.heartbeat);
  }

  stopHeartbeat() {
    clearInterval(this.pingTimer);
    this.pingTimer = null;
  }

  /** Drop the connection as a network failure would (used by tests and the heartbeat). */
  drop() {
    if (!this.ws) return;
    const old = this.ws;
    this.ws = null;
    this.stopHeartbeat();
    old.close(4000, "dropped");
    this.stats.drops += 1;
    if (!this.stopped) this.scheduleReconnect();
  }

  /** Stop for good. */
  close() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopHeartbeat();
    if (this.ws) this.ws.close(1000, "bye");
    this.ws = null;
    this.onStatus("closed", { reason: "closed" });
  }
}

// "last event #N" is a tooltip: written at most every TITLE_EVERY_MS, not for each event of a
// fast run (an attribute write per event costs the page a style pass every frame)
const TITLE_EVERY_MS = 250;
const titles = new Map();
let titleTimer = null;

function titleSoon(node, title) {
  titles.set(node, title);
  titleTimer ??= setTimeout(() => {
    titleTimer = null;
    for (const [target, text] of titles) if (target.title !== text) target.title = text;
    titles.clear();
  }, TITLE_EVERY_MS);
}

/** Render a LiveSocket status into an indicator element. */
export function showStatus(node, state, detail = {}) {
  if (node.dataset.state !== state) node.dataset.state = state;
  const labels = {
    connecting: "connecting…",
    live: "live",
    reconnecting: `reconnecting (attempt ${detail.attempt})…`,
    offline: `disconnected — retrying in ${Math.ceil((detail.delay || 0) / 1000)}s`,
    closed: `closed: ${detail.reason || ""}`,
  };
  const label = labels[state] || state;
  // called for every event of a fast run: write only what changed (no needless style work)
  if (node.textContent !== label) node.textContent = label;
  const title = detail.seq !== undefined ? `last event #${detail.seq}` : "";
  if (node.title !== title || titles.has(node)) titleSoon(node, title);
}
