// fleet.js: one tile per worker with KV usage, running/waiting and a
// sparkline of KV usage; tiles are built once and updated in place so that
// 64 workers at several updates per second stay cheap.
"use strict";

const tiles = new Map(); // worker id -> {node, fields, canvas}
let last = null;

function tile(w) {
  if (tiles.has(w.id)) return tiles.get(w.id);
  const node = el("div", null, { class: "tile", id: "tile-" + w.id, "data-id": w.id });
  const h = el("h3");
  h.append(el("span", w.id), el("span", "", { class: "st" }));
  const line = el("div", "", { class: "line" });
  const canvas = el("canvas", null, { width: 160, height: 28 });
  node.append(h, line, canvas);
  node.addEventListener("click", () => { if (w.ui) location.href = "/ui/worker/" + encodeURIComponent(w.id); });
  const t = { node, state: h.lastChild, line, canvas, updated: 0, changes: 0, maxRun: 0, text: "" };
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

function render(u) {
  last = u;
  const key = document.getElementById("sort").value;
  const ws = u.workers.slice();
  if (key !== "id") ws.sort((a, b) => b[key] - a[key] || a.id.localeCompare(b.id));
  const box = document.getElementById("tiles");
  ws.forEach((w, i) => {
    const t = tile(w);
    if (box.children[i] !== t.node) box.insertBefore(t.node, box.children[i] || null);
    const text = `KV ${w.usage.toFixed(1)} % · run ${w.running} · wait ${w.waiting}`;
    if (text !== t.text) { t.line.textContent = text; t.text = text; t.changes++; }
    t.maxRun = Math.max(t.maxRun, w.running);
    t.state.textContent = w.state;
    t.node.classList.toggle("down", w.state !== "running");
    spark(t.canvas, w.spark);
    t.updated++;
    // Read by the browser test: updates received, shown text changes, peak running.
    t.node.dataset.updates = t.updated;
    t.node.dataset.changes = t.changes;
    t.node.dataset.maxRun = t.maxRun;
  });
}

document.getElementById("sort").addEventListener("change", () => last && render(last));
connect(document.body.dataset.base + "/stream?view=fleet", render);
