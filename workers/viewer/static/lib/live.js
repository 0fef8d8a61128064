// Live events: a snapshot, then the viewer's socket from the snapshot's sequence. When the
// socket drops (or goes quiet, or the bus behind it is gone) the page says how stale it
// is, reconnects with backoff, and resyncs from a new snapshot. The page never polls.
import { get } from "./api.js";

const QUIET_MS = 12000;      // heartbeats come every 5 s
const FEED_MAX = 1000;       // activity items a page keeps (newest first)
const BACKOFF_MIN = 1000;
const BACKOFF_MAX = 30000;

export class Live {
  constructor(statusEl) {
    this.statusEl = statusEl;
    this.listeners = new Map();
    this.snapshot = null;
    this.feed = [];
    /** What memory took in, newest first: the snapshot's items, every live event since,
        and older pages a person asked for. Kept across page changes. */
    this.more = true;
    this.seq = 0;
    this.ws = null;
    this.attempts = 0;
    this.lastNews = 0;
    this.busUp = true;
    this.retryAt = 0;
    this.timer = null;
    setInterval(() => this.showStatus(), 1000);
  }

  on(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
    return () => this.listeners.get(type).delete(fn);
  }

  emit(type, value) {
    for (const fn of this.listeners.get(type) || []) {
      try { fn(value); } catch (e) { console.error(`live ${type} listener`, e); }
    }
  }

  async start() {
    await this.resync();
    this.connect();
  }

  async resync() {
    const snap = await get("viewer/snapshot?limit=200");
    this.snapshot = snap;
    this.seq = snap.seq;
    this.feed = snap.activity.slice();
    this.more = Boolean(snap.more);
    this.lastNews = Date.now();
    this.emit("snapshot", snap);
  }

  connect() {
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/live?after=${this.seq}`);
    this.ws = ws;
    ws.addEventListener("open", () => { this.attempts = 0; this.lastNews = Date.now(); this.showStatus(); });
    ws.addEventListener("message", (ev) => this.receive(JSON.parse(ev.data)));
    ws.addEventListener("close", () => { if (this.ws === ws) this.retry(); });
  }

  receive(msg) {
    this.lastNews = Date.now();
    if (msg.type === "event") {
      this.seq = Math.max(this.seq, msg.item.seq);
      if (!this.feed.length || msg.item.seq > this.feed[0].seq) {
        this.feed.unshift(msg.item);
        if (this.feed.length > FEED_MAX) this.feed.length = FEED_MAX;
      }
      this.emit("event", msg.item);
    } else if (msg.type === "kv") {
      this.emit(`kv:${msg.kind}`, msg);
    } else if (msg.type === "health" || (msg.type === "hello" && msg.health)) {
      if (this.snapshot) this.snapshot.health = msg.health;
      this.emit("health", msg.health);
    } else if (msg.type === "heartbeat") {
      this.busUp = msg.bus;
    }
    this.showStatus();
  }

  // Older events than the feed holds, appended to it; how many came.
  async older(limit = 100) {
    const oldest = this.feed.length ? this.feed[this.feed.length - 1].seq : this.seq + 1;
    if (oldest <= 1) { this.more = false; return 0; }
    const page = await get(`viewer/activity?before=${oldest}&limit=${limit}`);
    const fresh = page.activity.filter((i) => i.seq < oldest);
    this.feed.push(...fresh);
    this.more = page.more;
    return fresh.length;
  }

  retry() {
    this.ws = null;
    const delay = Math.min(BACKOFF_MAX, BACKOFF_MIN * 2 ** this.attempts) * (0.75 + Math.random() / 2);
    this.attempts++;
    this.retryAt = Date.now() + delay;
    clearTimeout(this.timer);
    this.timer = setTimeout(async () => {
      try {
        await this.resync();
        this.emit("resync", this.snapshot);
        this.connect();
      } catch (e) {
        this.retry();
      }
    }, delay);
    this.showStatus();
  }

  // A socket that has gone quiet is as good as closed: drop it and reconnect.
  showStatus() {
    const el = this.statusEl;
    const quiet = Date.now() - this.lastNews;
    const open = this.ws && this.ws.readyState === WebSocket.OPEN;
    if (open && quiet > QUIET_MS) {
      const ws = this.ws;
      this.ws = null;
      ws.close();
      this.retry();
      return;
    }
    let state = "live";
    let text = "live";
    let detail = "";
    if (!open) {
      state = "stale";
      text = this.ws ? "connecting…" : "stale";
      const secs = Math.round(quiet / 1000);
      const next = Math.max(0, Math.round((this.retryAt - Date.now()) / 1000));
      detail = this.ws ? "" : `last update ${secs} s ago, reconnecting in ${next} s`;
    } else if (!this.busUp) {
      state = "stale";
      text = "stale";
      detail = "the viewer lost the engine's bus; waiting for it";
    }
    if (el.dataset.state !== state || el.textContent !== text) {
      el.dataset.state = state;
      el.textContent = text;
    }
    const d = document.getElementById("live-detail");
    if (d && d.textContent !== detail) d.textContent = detail;
  }
}
