// The clawlane dashboard: a protocol v4 client of the gateway that served it, over
// WebSocket. No build step, no dependencies. Everything shown comes from gateway methods
// (sessions.list, chat.history, chat.send, clawlane.dashboard, clawlane.series,
// clawlane.generations) and events (agent, runtime.generation). Text from the gateway is
// only ever set as textContent, never parsed as HTML.
//
// The token: entered once in the form, or handed over in the URL's fragment
// (`#token=...`, as `clawlane dashboard` prints it): a fragment is never sent to the
// server, nor in a Referer; the page stores it for this origin (localStorage) and removes
// it from the address bar at once. The page itself embeds no secret.
//
// The device: like OpenClaw's Control UI, the page signs the gateway's connect challenge
// with an ed25519 key of its own (WebCrypto; the private key is not extractable and is
// kept in this origin's IndexedDB). On direct loopback the gateway pairs it silently;
// elsewhere the connect waits for an operator to approve the device. WebCrypto needs a
// secure context: https, or http on localhost / 127.0.0.1.
"use strict";

const TOKEN_KEY = "clawlane.dashboard.token";
const SESSION_KEY = "clawlane.dashboard.session";
const PROTOCOL = 4;
const REQUEST_TIMEOUT_MS = 15000;
const WINDOW_S = 600; // the chart's span: the last ten minutes
const MAX_TRANSCRIPT = 60;
const CLIENT = { id: "webchat-ui", version: "1", platform: "web", mode: "ui", displayName: "clawlane dashboard" };
const ROLE = "operator";
const SCOPES = ["operator.read", "operator.write"];

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "width") node.style.width = v; // CSSOM: allowed by the page's CSP
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function randomId() {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes); // works on plain http too, unlike crypto.randomUUID
  return "dash-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min";
  return Math.floor(s / 3600) + " h";
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString();
}

function bytes(n) {
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1048576).toFixed(1) + " MiB";
}

// --- the token ---------------------------------------------------------------------------

function takeFragmentToken() {
  if (!location.hash) return;
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token) localStorage.setItem(TOKEN_KEY, token);
  history.replaceState(null, "", location.pathname + location.search);
}

function storedToken() {
  return localStorage.getItem(TOKEN_KEY) || "";
}

// --- the device identity (ed25519, WebCrypto) ------------------------------------------------

function b64url(bytes) {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

function idb(mode, fn) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open("clawlane-dashboard", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("keys");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction("keys", mode);
      const req = fn(tx.objectStore("keys"));
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    };
  });
}

let devicePromise = null;

function deviceIdentity() {
  // One key per origin, made on first use; null where WebCrypto cannot make one.
  if (!devicePromise) devicePromise = loadOrCreateDevice().catch(() => null);
  return devicePromise;
}

async function loadOrCreateDevice() {
  if (!window.isSecureContext || !crypto.subtle) return null;
  try {
    const stored = await idb("readonly", (store) => store.get("device"));
    if (stored && stored.privateKey) return stored;
  } catch {
    /* no IndexedDB (private window): a key for this page's life only */
  }
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const device = { id: hex(await crypto.subtle.digest("SHA-256", raw)), publicKey: b64url(raw), privateKey: pair.privateKey };
  try {
    await idb("readwrite", (store) => store.put(device, "device"));
  } catch {
    /* kept in memory only */
  }
  return device;
}

async function signChallenge(device, nonce, token) {
  // OpenClaw's v3 device payload (runtime._device_auth.SignedFields.payload_v3).
  const signedAt = Date.now();
  const payload = ["v3", device.id, CLIENT.id, CLIENT.mode, ROLE, SCOPES.join(","), String(signedAt), token, nonce, CLIENT.platform.toLowerCase(), ""].join("|");
  const signature = await crypto.subtle.sign({ name: "Ed25519" }, device.privateKey, new TextEncoder().encode(payload));
  return { id: device.id, publicKey: device.publicKey, signature: b64url(new Uint8Array(signature)), signedAt, nonce };
}

// --- the gateway connection ----------------------------------------------------------------

class GatewayConnection {
  constructor(onEvent, onState) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.hello = null;
    this.retryMs = 500;
    this.stopped = false;
  }

  url() {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/";
  }

  open() {
    this.stopped = false;
    this.onState("connecting");
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.onmessage = (msg) => this.receive(msg.data);
    ws.onclose = () => this.closed(ws);
  }

  closed(ws) {
    if (ws !== this.ws) return;
    this.hello = null;
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(new Error("connection closed"));
    }
    this.pending.clear();
    if (this.stopped) return;
    this.onState("offline");
    setTimeout(() => this.open(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, 10000);
  }

  stop() {
    this.stopped = true;
    if (this.ws) this.ws.close();
  }

  receive(text) {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.type === "res") {
      const waiter = this.pending.get(frame.id);
      if (!waiter) return;
      this.pending.delete(frame.id);
      clearTimeout(waiter.timer);
      if (frame.ok) waiter.resolve(frame.payload);
      else waiter.reject(Object.assign(new Error(frame.error?.message || "request failed"), { shape: frame.error }));
    } else if (frame.type === "event") {
      if (frame.event === "connect.challenge") this.handshake(frame.payload?.nonce || "");
      else this.onEvent(frame.event, frame.payload || {});
    }
  }

  send(method, params) {
    const id = "r" + this.nextId++;
    const ws = this.ws;
    return new Promise((resolve, reject) => {
      if (!ws || ws.readyState !== WebSocket.OPEN) {
        reject(new Error("not connected"));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(method + " timed out"));
      }, REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(JSON.stringify({ type: "req", id, method, params }));
    });
  }

  request(method, params) {
    if (!this.hello) return Promise.reject(new Error("not connected"));
    return this.send(method, params);
  }

  async handshake(nonce) {
    const token = storedToken();
    const params = {
      minProtocol: PROTOCOL,
      maxProtocol: PROTOCOL,
      client: CLIENT,
      role: ROLE,
      scopes: SCOPES,
      caps: ["session-scoped-events"],
    };
    if (token) params.auth = { token };
    const device = await deviceIdentity();
    if (device) params.device = await signChallenge(device, nonce, token);
    try {
      this.hello = await this.send("connect", params);
      this.retryMs = 500;
      const granted = this.hello.auth?.scopes || [];
      if (!granted.includes("operator.read") && !granted.includes("operator.write") && !granted.includes("operator.admin")) {
        this.stopped = true;
        this.onState("noscopes", device ? "" : "this browser could not make a device identity (it needs https, or http on localhost)");
        this.ws.close();
        return;
      }
      this.onState("online", this.hello);
    } catch (err) {
      const details = err.shape?.details || {};
      const code = details.code || "";
      if (code.startsWith("AUTH_") && code !== "AUTH_RATE_LIMITED") {
        this.stopped = true;
        this.onState("auth", err.message);
      } else if (code === "PAIRING_REQUIRED") {
        this.retryMs = 5000;
        this.onState("pairing", { message: err.message, requestId: details.requestId, deviceId: details.deviceId });
      } else {
        this.onState("offline", err.message);
      }
    }
  }
}

// --- the chart -----------------------------------------------------------------------------

class Chart {
  constructor(canvas) {
    this.canvas = canvas;
    this.samples = []; // from clawlane.series
    this.latency = new Map(); // second -> [ms, ...] measured here
  }

  addSamples(samples) {
    for (const s of samples) this.samples.push(s);
    const cutoff = Date.now() - WINDOW_S * 1000;
    while (this.samples.length && this.samples[0].ts < cutoff) this.samples.shift();
  }

  addLatency(ms) {
    const second = Math.floor(Date.now() / 1000);
    if (!this.latency.has(second)) this.latency.set(second, []);
    const bucket = this.latency.get(second);
    if (bucket.length < 2000) bucket.push(ms);
    const cutoff = second - WINDOW_S;
    for (const key of this.latency.keys()) {
      if (key < cutoff) this.latency.delete(key);
      else break;
    }
  }

  draw() {
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 600;
    const h = c.clientHeight || 240;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const pad = { l: 48, r: 56, t: 12, b: 24 };
    const now = Date.now();
    const t0 = now - WINDOW_S * 1000;
    const x = (ts) => pad.l + ((ts - t0) / (WINDOW_S * 1000)) * (w - pad.l - pad.r);
    const runs = this.samples.map((s) => [s.ts, s.runsPerS]);
    const first = this.samples.filter((s) => s.firstEventMs !== null).map((s) => [s.ts, s.firstEventMs]);
    const lat = [];
    for (const [second, values] of this.latency) {
      const sorted = [...values].sort((a, b) => a - b);
      lat.push([second * 1000 + 500, sorted[Math.floor(sorted.length / 2)]]);
    }
    const maxRuns = niceMax(Math.max(1, ...runs.map((p) => p[1])));
    const maxMs = niceMax(Math.max(10, ...first.map((p) => p[1]), ...lat.map((p) => p[1])));
    const yRuns = (v) => h - pad.b - (v / maxRuns) * (h - pad.t - pad.b);
    const yMs = (v) => h - pad.b - (Math.min(v, maxMs) / maxMs) * (h - pad.t - pad.b);
    const style = getComputedStyle(document.body);
    g.font = "11px system-ui, sans-serif";
    g.strokeStyle = style.getPropertyValue("--grid") || "#333";
    g.fillStyle = style.getPropertyValue("--muted") || "#888";
    g.lineWidth = 1;
    for (let i = 0; i <= 4; i++) {
      const y = pad.t + (i / 4) * (h - pad.t - pad.b);
      g.beginPath();
      g.moveTo(pad.l, y);
      g.lineTo(w - pad.r, y);
      g.stroke();
      g.textAlign = "right";
      g.fillText(fmt(maxRuns * (1 - i / 4)), pad.l - 6, y + 4);
      g.textAlign = "left";
      g.fillText(fmt(maxMs * (1 - i / 4)) + " ms", w - pad.r + 6, y + 4);
    }
    g.textAlign = "center";
    for (let m = 0; m <= WINDOW_S / 60; m += 2) {
      const ts = now - m * 60000;
      g.fillText(m === 0 ? "now" : "-" + m + " min", x(ts), h - 6);
    }
    line(g, runs.map(([t, v]) => [x(t), yRuns(v)]), style.getPropertyValue("--runs") || "#4caf50", true, h - pad.b);
    line(g, first.map(([t, v]) => [x(t), yMs(v)]), style.getPropertyValue("--first") || "#ff9800", false);
    line(g, lat.map(([t, v]) => [x(t), yMs(v)]), style.getPropertyValue("--lat") || "#03a9f4", false);
  }
}

function niceMax(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function fmt(v) {
  // An axis tick: a quarter of a 1-2-5 maximum (0.25, 1.25, 37.5) is not rounded to 0.3.
  return v >= 10 ? Math.round(v).toString() : String(Number(v.toFixed(2)));
}

function line(g, points, color, fill, base) {
  if (!points.length) return;
  if (points.length === 1) {
    g.fillStyle = color.trim();
    g.beginPath();
    g.arc(points[0][0], points[0][1], 3, 0, 2 * Math.PI);
    g.fill();
    return;
  }
  g.strokeStyle = color.trim();
  g.lineWidth = 2;
  g.beginPath();
  points.forEach(([px, py], i) => (i ? g.lineTo(px, py) : g.moveTo(px, py)));
  g.stroke();
  if (fill && points.length > 1) {
    g.lineTo(points[points.length - 1][0], base);
    g.lineTo(points[0][0], base);
    g.closePath();
    g.globalAlpha = 0.15;
    g.fillStyle = color.trim();
    g.fill();
    g.globalAlpha = 1;
  }
}

// --- the page ------------------------------------------------------------------------------

const state = {
  selected: null, // the session key being watched
  subscribed: null,
  runs: new Map(), // runId -> {node, text, status} of the live runs shown
  seriesSince: 0,
  timers: [],
  searchTimer: null,
};

const chart = new Chart($("chart"));
const gw = new GatewayConnection(onEvent, onState);

function onState(kind, detail) {
  const pill = $("conn-state");
  pill.dataset.state = kind;
  pill.className = "pill " + (kind === "online" ? "pill-on" : "pill-off");
  pill.textContent = {
    online: "connected",
    connecting: "connecting…",
    offline: "offline",
    auth: "token needed",
    pairing: "waiting for approval",
    noscopes: "no access",
  }[kind];
  $("forget-token").hidden = !storedToken();
  const notice = $("notice");
  notice.hidden = kind !== "pairing" && kind !== "noscopes";
  if (kind === "pairing") {
    notice.textContent =
      "This browser asked to be paired as device " + (detail.deviceId || "").slice(0, 16) + "…" +
      (detail.requestId ? " (request " + detail.requestId + ")" : "") +
      ". Approve it from an operator (openclaw devices approve, or device.pair.approve); this page retries.";
  } else if (kind === "noscopes") {
    notice.textContent = "Connected, but the gateway granted no scopes: " + (detail || "pair this device first") + ".";
  }
  if (kind === "auth") {
    $("token-panel").hidden = false;
    $("token-error").textContent = detail || "";
    $("token-input").focus();
  }
  if (kind === "online") {
    $("token-panel").hidden = true;
    const hello = detail;
    const defaults = hello.snapshot?.sessionDefaults || {};
    $("gw-info").textContent = "v" + hello.server.version + " · " + (hello.snapshot?.authMode || "") + " auth";
    const key = state.selected || localStorage.getItem(SESSION_KEY) || defaults.mainSessionKey || "agent:main:main";
    state.subscribed = null;
    select(key);
    startPolling();
  } else {
    stopPolling();
  }
}

function startPolling() {
  stopPolling();
  const every = (ms, fn) => {
    fn();
    state.timers.push(setInterval(fn, ms));
  };
  every(1000, refreshDashboard);
  every(2000, refreshSeries);
  every(5000, refreshSessions);
  every(5000, refreshGenerations);
  every(1000, () => chart.draw());
}

function stopPolling() {
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
}

function onEvent(event, payload) {
  if (event === "agent") {
    if (typeof payload.ts === "number") chart.addLatency(Date.now() - payload.ts);
    if (payload.sessionKey === state.selected) onRunEvent(payload);
  } else if (event === "runtime.generation") {
    refreshGenerations();
  }
}

// --- the live run ----------------------------------------------------------------------------

function makeBubble(role, text, extra) {
  return el("div", { class: "msg msg-" + role + (extra ? " " + extra : "") },
    el("span", { class: "who", text: role }),
    el("span", { class: "text", text }));
}

function bubble(role, text, extra) {
  const node = makeBubble(role, text, extra);
  const box = $("transcript");
  box.append(node);
  while (box.children.length > MAX_TRANSCRIPT) box.firstChild.remove();
  box.scrollTop = box.scrollHeight;
  return node;
}

function setRunStatus(text, kind) {
  const pill = $("run-status");
  pill.textContent = text;
  pill.className = "pill " + (kind || "");
}

function onRunEvent(p) {
  let run = state.runs.get(p.runId);
  const data = p.data || {};
  if (p.stream === "lifecycle" && data.phase === "start") {
    if (!run) {
      run = { node: bubble("assistant", "", "streaming"), text: "" };
      run.node.dataset.shown = "assistant:" + p.runId;
      state.runs.set(p.runId, run);
    }
    setRunStatus("running", "pill-run");
    return;
  }
  if (!run) return;
  if (p.stream === "assistant" && typeof data.text === "string") {
    run.text = data.text;
    run.node.querySelector(".text").textContent = data.text;
    $("transcript").scrollTop = $("transcript").scrollHeight;
  } else if (p.stream === "lifecycle" && (data.phase === "end" || data.phase === "error")) {
    run.node.classList.remove("streaming");
    if (data.phase === "error") {
      run.node.classList.add("msg-error");
      run.node.querySelector(".text").textContent = run.text || data.error || "run failed";
      setRunStatus("error", "pill-err");
    } else {
      if (data.aborted) run.node.classList.add("msg-aborted");
      run.node.dataset.done = "true";
      setRunStatus(data.aborted ? "aborted" : "done", data.aborted ? "pill-off" : "pill-on");
    }
    state.runs.delete(p.runId);
  }
}

function messageText(message) {
  const content = message.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  return "";
}

async function select(key) {
  key = key.trim();
  if (!key) return;
  state.selected = key;
  localStorage.setItem(SESSION_KEY, key);
  $("session-key").value = key;
  $("run-session").textContent = key;
  for (const li of $("sessions").children) li.classList.toggle("selected", li.dataset.key === key);
  if (state.subscribed === key) return;
  const previous = state.subscribed;
  state.subscribed = key;
  state.runs.clear();
  $("transcript").replaceChildren();
  setRunStatus("", "");
  try {
    if (previous) await gw.request("sessions.messages.unsubscribe", { key: previous }).catch(() => {});
    await gw.request("sessions.messages.subscribe", { key });
    const history = await gw.request("chat.history", { sessionKey: key, limit: 30, maxChars: 4000 });
    if (state.selected !== key) return;
    // What was sent or began streaming while the history loaded is already on screen (and
    // stays there): the history goes before it, without the turns shown twice.
    const box = $("transcript");
    const shown = new Set([...box.children].map((n) => n.dataset.shown).filter(Boolean));
    const older = document.createDocumentFragment();
    for (const m of history.messages || []) {
      const role = m.role === "user" ? "user" : "assistant";
      const runId = m.__openclaw?.runId;
      if (runId && shown.has(role + ":" + runId)) continue;
      const text = messageText(m);
      if (text) older.append(makeBubble(role, text));
    }
    box.prepend(older);
    while (box.children.length > MAX_TRANSCRIPT) box.firstChild.remove();
    box.scrollTop = box.scrollHeight;
  } catch (err) {
    $("send-error").textContent = err.message;
  }
}

async function send(event) {
  event.preventDefault();
  const key = $("session-key").value.trim();
  const text = $("message").value;
  if (!key || !text.trim()) return;
  $("send-error").textContent = "";
  if (key !== state.selected) await select(key);
  const runId = randomId(); // chat.send's idempotency key is its run's id
  bubble("user", text).dataset.shown = "user:" + runId;
  $("message").value = "";
  try {
    await gw.request("chat.send", { sessionKey: key, message: text, idempotencyKey: runId });
    if (!state.runs.size) setRunStatus("queued", "pill-run"); // until its lifecycle start
  } catch (err) {
    $("send-error").textContent = err.message;
  }
}

// --- the panels --------------------------------------------------------------------------

async function refreshDashboard() {
  let d;
  try {
    d = await gw.request("clawlane.dashboard", {});
  } catch {
    return;
  }
  $("gw-info").textContent =
    "v" + d.version + " · generation " + d.generation + " · up " + ago(Date.now() - d.uptimeMs);
  const lanes = $("lanes");
  lanes.replaceChildren(
    ...d.lanes.map((l) =>
      el("div", { class: "lane", "data-lane": l.name },
        el("span", { class: "lane-name", text: l.name }),
        el("span", { class: "bar" }, el("span", { class: "fill", width: Math.min(100, (100 * l.inUse) / Math.max(1, l.capacity)) + "%" })),
        el("span", { class: "lane-num", text: l.inUse + "/" + l.capacity + (l.waiting ? " · " + l.waiting + " waiting" : "") }))));
  $("lane-summary").textContent =
    d.sessions.loaded + " sessions loaded, " + d.sessions.busy + " busy, " + d.sessions.queuedRuns +
    " runs queued · store: " + d.store.pending + " pending, " + d.store.commits + " commits" +
    (d.store.failed ? ", " + d.store.failed + " failed" : "");
  $("runs-count").textContent = d.runs.active + " (" + d.runs.queued + " queued)";
  $("runs").replaceChildren(
    ...d.runs.items.map((r) =>
      el("tr", { class: "status-" + r.status },
        el("td", { class: "mono", text: r.runId.slice(0, 18) }),
        el("td", { class: "mono", text: r.sessionKey }),
        el("td", { text: r.status }),
        el("td", { text: ago(r.acceptedAt) }))));
  $("connections-count").textContent = d.connections.count;
  $("connections").replaceChildren(
    ...d.connections.items.map((c) =>
      el("tr", {},
        el("td", { class: "mono", text: c.connId }),
        el("td", { text: c.clientId + " (" + c.mode + ")" }),
        el("td", { text: c.role + (c.scoped ? ", scoped" : "") }),
        el("td", { class: "mono", text: c.scopes.map((s) => s.replace("operator.", "")).join(" ") }),
        el("td", { text: bytes(c.bufferedBytes) }))));
}

async function refreshSeries() {
  try {
    const s = await gw.request("clawlane.series", { sinceMs: state.seriesSince });
    if (s.samples.length) state.seriesSince = s.samples[s.samples.length - 1].ts;
    chart.addSamples(s.samples);
  } catch {
    /* the next poll tries again */
  }
}

async function refreshSessions() {
  const search = $("session-search").value.trim();
  let res;
  try {
    res = await gw.request("sessions.list", search ? { search, limit: 100 } : { limit: 100 });
  } catch {
    return;
  }
  const rows = [...res.sessions].sort((a, b) => (b.updatedAt || 0) - (a.updatedAt || 0));
  $("sessions-count").textContent = res.count;
  $("sessions").replaceChildren(
    ...rows.map((s) => {
      const li = el("li", { class: s.key === state.selected ? "selected" : "", onclick: () => select(s.key) },
        el("span", { class: "mono key", text: s.key }),
        s.label ? el("span", { class: "label", text: s.label }) : null,
        s.hasActiveRun ? el("span", { class: "pill pill-run", text: "running" }) : null,
        el("span", { class: "muted when", text: s.updatedAt ? ago(s.updatedAt) : "" }));
      li.dataset.key = s.key;
      return li;
    }));
}

async function refreshGenerations() {
  let g;
  try {
    g = await gw.request("clawlane.generations", {});
  } catch {
    return;
  }
  $("generation-now").textContent = "serving " + g.serving.number;
  $("generations").replaceChildren(
    ...[...g.history].reverse().map((h) =>
      el("tr", { class: "gen-" + h.status },
        el("td", { text: h.at ? clock(h.at) : "" }),
        el("td", { text: h.status }),
        el("td", { text: h.number === null || h.number === undefined ? "–" : String(h.number) }),
        el("td", { text: h.reason || "" }),
        el("td", { class: "detail", text: h.status === "failed" ? h.message : h.latencyMs !== undefined ? h.latencyMs + " ms build" : "" }))));
}

// --- start ---------------------------------------------------------------------------------

function main() {
  takeFragmentToken();
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) return;
    localStorage.setItem(TOKEN_KEY, token);
    $("token-input").value = "";
    $("token-error").textContent = "";
    gw.open();
  });
  $("forget-token").addEventListener("click", () => {
    localStorage.removeItem(TOKEN_KEY);
    gw.stop();
    onState("auth", "token forgotten");
  });
  $("send-form").addEventListener("submit", send);
  $("session-key").addEventListener("change", () => select($("session-key").value));
  $("session-search").addEventListener("input", () => {
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(refreshSessions, 250);
  });
  window.addEventListener("resize", () => chart.draw());
  gw.open();
}

main();
