// fleet.js: one tile per worker with its state, KV usage, running/waiting,
// throughput, latency, URL and a sparkline of KV usage, and the fleet's
// totals; tiles are built once and updated in place so that 64 workers at
// several updates per second stay cheap.
"use strict";

const tiles = new Map(); // worker id -> {node, fields, canvas}
let last = null;

// A worker's condition is told by a color, a symbol and a word, never by
// the color alone. "slowed" is a running worker a slow action retimed,
// "sleeping" one in vLLM's sleep mode (it serves nothing until woken).
const CONDITIONS = {
  running: "● running", sleeping: "☾ sleeping", slowed: "◔ slowed", draining: "⇥ draining", paused: "❚❚ paused",
  killed: "✕ killed", starting: "○ starting", stopped: "■ stopped",
};
function condition(w) {
  if (w.state === "running" && w.sleep) return "sleeping";
  if (w.state === "running" && w.slow) return "slowed";
  return CONDITIONS[w.state] ? w.state : "stopped";
}

function tile(w) {
  if (tiles.has(w.id)) return tiles.get(w.id);
  const node = el("div", null, { class: "tile", id: "tile-" + w.id, "data-id": w.id });
  const h = el("h3");
  h.append(el("span", "worker " + w.id), el("span", "", { class: "st" }));
  const line = el("div", "", { class: "line" });
  const perf = el("div", "", { class: "perf" });
  const lat = el("div", "", { class: "perf lat" });
  const note = el("div", "", { class: "warn note" });
  const url = el("div", "", { class: "url" });
  const canvas = el("canvas", null, { width: 200, height: 28 });
  node.append(h, line, perf, lat, note, url, canvas);
  node.addEventListener("click", () => { if (w.ui) location.href = "/ui/worker/" + encodeURIComponent(w.id); });
  const t = { node, state: h.lastChild, line, perf, lat, note, url, canvas, updated: 0, changes: 0, maxRun: 0, text: "" };
  tiles.set(w.id, t);
  return t;
}

function spark(canvas, values) {
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (!values || values.length < 2) return;
  ctx.beginPath();
  values.forEach((v, i) => {
    const x = (i * (canvas.width - 1)) / (values.length - 1);
    const y = canvas.height - 1 - (v / 100) * (canvas.height - 2);
    i ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
  });
  ctx.strokeStyle = "#2563eb";
  ctx.stroke();
}

// setText changes a node's text only when it differs (cheap updates).
function setText(node, text) { if (node.textContent !== text) node.textContent = text; }

function renderTotals(ws) {
  const n = {};
  let tok = 0, req = 0, running = 0, waiting = 0, inUse = 0, blocks = 0;
  for (const w of ws) {
    const c = condition(w);
    n[c] = (n[c] || 0) + 1;
    if (c === "killed" || c === "starting" || c === "stopped") continue;
    tok += w.tokens_per_s; req += w.requests_per_s; running += w.running; waiting += w.waiting;
    inUse += w.in_use; blocks += w.blocks;
  }
  setText(document.getElementById("t-workers"), fmtInt(ws.length));
  const states = document.getElementById("t-states");
  const text = Object.keys(CONDITIONS).filter((c) => n[c]).map((c) => `${CONDITIONS[c]} ${n[c]}`).join("   ");
  setText(states, text);
  states.dataset.counts = JSON.stringify(n);
  setText(document.getElementById("t-tok"), fmtTokS(tok));
  setText(document.getElementById("t-req"), fmtReqS(req));
  setText(document.getElementById("t-running"), fmtInt(running));
  setText(document.getElementById("t-waiting"), fmtInt(waiting));
  setText(document.getElementById("t-kv"), blocks ? fmtPct((100 * inUse) / blocks) : "—");
}

function render(u) {
  last = u;
  const key = document.getElementById("sort").value;
  const ws = u.workers.slice();
  if (key === "state") ws.sort((a, b) => condition(a).localeCompare(condition(b)) || a.id.localeCompare(b.id, undefined, { numeric: true }));
  else if (key !== "id") ws.sort((a, b) => b[key] - a[key] || a.id.localeCompare(b.id, undefined, { numeric: true }));
  renderTotals(ws);
  const box = document.getElementById("tiles");
  ws.forEach((w, i) => {
    const t = tile(w);
    if (box.children[i] !== t.node) box.insertBefore(t.node, box.children[i] || null);
    const c = condition(w);
    const up = c !== "killed" && c !== "starting" && c !== "stopped";
    // A worker that is not up has no pool and no queues: its last numbers
    // would read as current.
    const text = up ? `KV ${fmtPct(w.usage)} · run ${w.running} · wait ${w.waiting}` : "KV — · run — · wait —";
    if (text !== t.text) { t.line.textContent = text; t.text = text; t.changes++; }
    setText(t.perf, up ? `${fmtTokS(w.tokens_per_s)} · ${fmtReqS(w.requests_per_s)}` : "— tok/s · — req/s");
    setText(t.lat, up && w.finished ? `p50: TTFT ${fmtMs(w.ttft_p50_ms)} · ITL ${fmtMs(w.itl_p50_ms)}` : "p50: TTFT — · ITL —");
    const notes = [];
    if (w.health === "failing") notes.push("/health 503");
    if (w.draining && w.state !== "draining") notes.push("also draining");
    if (w.sleep) notes.push("asleep, " + w.sleep);
    if (w.slow) notes.push(w.slow);
    setText(t.note, notes.join(" · ") || "\u00a0");
    setText(t.url, w.url || "not listening");
    t.url.title = w.url;
    t.maxRun = Math.max(t.maxRun, w.running);
    setText(t.state, CONDITIONS[c]);
    t.node.className = "tile s-" + c;
    spark(t.canvas, w.spark);
    t.updated++;
    // Read by the browser test: updates received, shown text changes, peak
    // running, the condition shown and what /health was said to answer.
    t.node.dataset.updates = t.updated;
    t.node.dataset.changes = t.changes;
    t.node.dataset.maxRun = t.maxRun;
    t.node.dataset.condition = c;
    t.node.dataset.health = w.health;
  });
}

document.getElementById("sort").addEventListener("change", () => last && render(last));
connect(document.body.dataset.base + "/stream?view=fleet", render);
