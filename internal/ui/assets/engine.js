// engine.js: the engine and requests pages of one worker. Each stream
// update is a whole snapshot (see docs/ui.md): KV grid codes per rank, the
// queues, the last passes, latency percentiles and the requests table.
"use strict";

const base = document.body.dataset.base;
const ranks = new Map(); // rank number -> its DOM and charts
let lastUpdate = null;
let selected = null; // request id shown in the timeline

// Block colors: free, cached (evictable), in use shaded by reference count.
const FREE = "#ffffff", CACHED = "#fbbf24";
function inUseColor(refs) { return `hsl(217, 83%, ${Math.max(28, 62 - refs * 6)}%)`; }

for (const b of document.querySelectorAll("header button[data-tab]")) {
  b.addEventListener("click", () => showTab(b.dataset.tab));
}
function showTab(name) {
  for (const t of ["engine", "requests"]) {
    document.getElementById("page-" + t).classList.toggle("hidden", t !== name);
    document.getElementById("tab-" + t).classList.toggle("active", t === name);
  }
  if (lastUpdate) render(lastUpdate);
}

function rankView(r) {
  if (ranks.has(r)) return ranks.get(r);
  const node = document.getElementById("rank-template").content.cloneNode(true);
  const wrap = el("div", null, { id: "rank-" + r, class: "rank" });
  wrap.appendChild(node);
  document.getElementById("ranks").appendChild(wrap);
  wrap.querySelector(".rank-no").textContent = r;
  const q = (s) => wrap.querySelector(s);
  const v = { wrap, q, grid: q(".kv-grid"), rle: "", numBlocks: 0, cols: 1, cell: 8 };
  v.grid.addEventListener("mousemove", (e) => hoverBlock(v, r, e));
  v.grid.addEventListener("mouseleave", () => { document.getElementById("tooltip").style.display = "none"; });
  const width = () => Math.max(300, q(".chart-batch").clientWidth || 500);
  v.batchChart = new uPlot({ width: width(), height: 160, scales: { x: { time: true } },
    series: [{}, { label: "batch", stroke: "#2563eb" }, { label: "prefill tokens", stroke: "#f59e0b" },
      { label: "decode tokens", stroke: "#10b981" }] }, [[], [], [], []], q(".chart-batch"));
  v.timeChart = new uPlot({ width: width(), height: 160, scales: { x: { time: true } },
    series: [{}, { label: "modeled", stroke: "#6366f1" }, { label: "actual", stroke: "#ef4444" }] },
    [[], [], []], q(".chart-time"));
  ranks.set(r, v);
  return v;
}

// expandRLE turns the run-length encoded grid (".4000c12A3": a code, then
// its run length when above one) into one code per block.
function expandRLE(rle) {
  const out = [];
  for (const [, code, n] of rle.matchAll(/([^0-9])([0-9]*)/g)) out.push(code.repeat(n ? Number(n) : 1));
  return out.join("");
}

function drawGrid(v, rle) {
  const blocks = expandRLE(rle);
  const c = v.grid, n = blocks.length;
  const width = c.parentElement.clientWidth - 4;
  v.cell = n <= 2048 ? 10 : n <= 8192 ? 6 : n <= 32768 ? 3 : 2;
  v.cols = Math.max(1, Math.floor(width / v.cell));
  const height = Math.ceil(n / v.cols) * v.cell;
  if (c.width !== width || c.height !== height) { c.width = width; c.height = height; }
  const ctx = c.getContext("2d");
  ctx.fillStyle = "#e5e7eb";
  ctx.fillRect(0, 0, c.width, c.height);
  const gap = v.cell > 4 ? 1 : 0;
  for (let i = 0; i < n; i++) {
    const code = blocks[i];
    ctx.fillStyle = code === "." ? FREE : code === "c" ? CACHED : inUseColor(code.charCodeAt(0) - 64);
    ctx.fillRect((i % v.cols) * v.cell, Math.floor(i / v.cols) * v.cell, v.cell - gap, v.cell - gap);
  }
  v.rle = rle;
  v.numBlocks = n;
}

let hoverTimer = null;
function hoverBlock(v, rank, e) {
  const rect = v.grid.getBoundingClientRect();
  const col = Math.floor((e.clientX - rect.left) / v.cell), row = Math.floor((e.clientY - rect.top) / v.cell);
  const block = row * v.cols + col;
  const tip = document.getElementById("tooltip");
  if (col >= v.cols || block >= v.numBlocks) { tip.style.display = "none"; return; }
  tip.style.left = e.clientX + 12 + "px";
  tip.style.top = e.clientY + 12 + "px";
  clearTimeout(hoverTimer);
  hoverTimer = setTimeout(async () => {
    const res = await fetch(`${base}/api/block?rank=${rank}&block=${block}`);
    if (!res.ok) return;
    const d = await res.json();
    tip.replaceChildren(el("div", `block ${d.block} · ${d.state}${d.refs ? " · refs " + d.refs : ""}`),
      el("div", "hash " + (d.hash || "—")), el("div", "parent " + (d.parent || "—")),
      el("div", "held by " + (d.holders.length ? d.holders.join(", ") : "nobody")));
    tip.style.display = "block";
  }, 60);
}

function progress(done, total) {
  const bar = el("span", null, { class: "bar" });
  const fill = el("i");
  fill.style.width = (total ? Math.min(100, (100 * done) / total) : 0) + "%";
  bar.appendChild(fill);
  const cell = el("td");
  cell.append(bar, ` ${done}/${total}`);
  return cell;
}

// A queue row: [id, prompt, computed, generated, planned, preemptions, preempted].
function queueRow(s) {
  const tr = el("tr", null, { "data-id": s[0] });
  tr.appendChild(el("td", s[0]));
  tr.appendChild(progress(Math.min(s[2], s[1]), s[1]));
  tr.appendChild(progress(s[3], s[4]));
  tr.appendChild(el("td", s[5] ? s[5] + (s[6] ? " (now)" : "") : ""));
  tr.addEventListener("click", () => { showTab("requests"); showRequest(s[0]); });
  return tr;
}

function renderRank(rk) {
  const v = rankView(rk.rank), q = v.q;
  if (rk.blocks_rle !== v.rle) drawGrid(v, rk.blocks_rle);
  q(".kv-in-use").textContent = rk.in_use;
  q(".kv-cached").textContent = rk.cached;
  q(".kv-free").textContent = rk.free;
  q(".hit-rate").textContent = (100 * rk.hit_rate).toFixed(1);
  q(".n-running").textContent = rk.num_running;
  q(".n-waiting").textContent = rk.num_waiting + (rk.sleeping ? "; engine asleep, level " + rk.sleep_level : "");
  fillBody(q("table.running tbody"), rk.running || [], queueRow);
  fillBody(q("table.waiting tbody"), rk.waiting || [], queueRow);
  const p = rk.passes, t = p.t || [];
  v.batchChart.setData([t, p.batch || [], p.prefill || [], p.decode || []]);
  v.timeChart.setData([t, p.modeled_ms || [], p.actual_ms || []]);
  fillBody(q("table.latency tbody"), ["ttft", "itl", "e2e"], (k) => {
    const tr = el("tr");
    tr.appendChild(el("th", k.toUpperCase()));
    for (const x of rk.latency[k]) tr.appendChild(el("td", x));
    return tr;
  });
  q(".totals").textContent = `passes ${rk.totals.passes} · preemptions ${rk.totals.preemptions} · evicted blocks ${rk.totals.evictions}`;
  q(".feed").textContent = (rk.feed || []).slice().reverse().join("\n");
}

function renderRequests(u) {
  const f = document.getElementById("filter").value.trim().toLowerCase();
  const rows = f ? u.requests.filter((r) => r.some((c) => String(c ?? "").toLowerCase().includes(f))) : u.requests;
  fillBody(document.querySelector("#requests tbody"), rows, (r) => {
    const tr = el("tr", null, { "data-id": r[0] });
    for (const c of r) tr.appendChild(el("td", c ?? "—"));
    tr.addEventListener("click", () => showRequest(r[0]));
    return tr;
  });
}

function render(u) {
  lastUpdate = u;
  if (!document.getElementById("page-engine").classList.contains("hidden")) {
    for (const rk of u.ranks) renderRank(rk);
  } else {
    renderRequests(u);
    // A running request's timeline grows: refresh it about once a second.
    if (selected && Date.now() - lastRefresh > 1000) refreshRequest();
  }
}

document.getElementById("filter").addEventListener("input", () => lastUpdate && renderRequests(lastUpdate));

// Charts and grids follow the window's width.
window.addEventListener("resize", () => {
  for (const v of ranks.values()) {
    const width = Math.max(300, v.q(".chart-batch").clientWidth || 500);
    v.batchChart.setSize({ width, height: 160 });
    v.timeChart.setSize({ width, height: 160 });
    if (v.rle) drawGrid(v, v.rle);
  }
});

async function showRequest(id) {
  selected = id;
  await refreshRequest();
}

let refreshing = false, lastRefresh = 0;
async function refreshRequest() {
  if (refreshing) return;
  refreshing = true;
  lastRefresh = Date.now();
  try {
    const res = await fetch(`${base}/api/request?id=${encodeURIComponent(selected)}`);
    if (res.ok) drawTimeline((await res.json()).sequences);
  } finally { refreshing = false; }
}

// drawTimeline shows each sequence of a request on one time axis: events
// as labelled marks, each delivered token as a tick.
function drawTimeline(seqs) {
  const box = document.getElementById("detail");
  const ns = "http://www.w3.org/2000/svg";
  const parts = [el("h2", "Timeline of " + selected)];
  for (const s of seqs) {
    parts.push(el("p", `rank ${s.rank} · engine id ${s.engine_id} · ${s.state}${s.finish_reason ? " (" + s.finish_reason + ")" : ""} · prompt ${s.prompt_tokens} · cached ${s.cached_tokens} · output ${s.output_tokens}/${s.planned_tokens} · preemptions ${s.preemptions}`, { class: "summary" }));
    const end = Math.max(1, ...s.events.map((e) => e.t), ...s.token_ms);
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "timeline");
    svg.setAttribute("viewBox", "0 0 1000 90");
    svg.setAttribute("preserveAspectRatio", "none");
    const x = (t) => 10 + (980 * t) / end;
    for (const t of s.token_ms) {
      const l = document.createElementNS(ns, "line");
      l.setAttribute("class", "tok");
      l.setAttribute("x1", x(t)); l.setAttribute("x2", x(t));
      l.setAttribute("y1", 50); l.setAttribute("y2", 80);
      l.setAttribute("stroke", "#10b981");
      svg.appendChild(l);
    }
    s.events.forEach((e, i) => {
      const g = document.createElementNS(ns, "text");
      g.setAttribute("x", x(e.t)); g.setAttribute("y", 14 + (i % 3) * 13);
      if (x(e.t) > 850) g.setAttribute("text-anchor", "end"); // keep late labels inside
      g.setAttribute("font-size", "11");
      g.setAttribute("class", "ev ev-" + e.kind);
      g.textContent = e.kind + (e.n ? " " + e.n : "") + (e.text ? " " + e.text : "");
      svg.appendChild(g);
    });
    parts.push(svg);
    parts.push(el("p", `${s.token_ms.length} tokens over ${end.toFixed(1)} ms${s.dropped ? " · " + s.dropped + " not kept" : ""}`, { class: "muted tokens" }));
    const ev = el("table", null, { class: "events" });
    fillBody(ev.appendChild(el("tbody")), s.events, (e) => {
      const tr = el("tr");
      tr.append(el("td", e.t.toFixed(2) + " ms"), el("td", e.kind), el("td", e.n || e.text || ""));
      return tr;
    });
    parts.push(ev);
    const kv = el("div", null, { class: "feed kv" });
    kv.textContent = s.kv_events.length ? s.kv_events.map((k) => `${k.t.toFixed(2)} ms ${k.kind} ${k.hashes.join(" ")}`).join("\n") : "no KV events attributed";
    parts.push(el("h2", "KV events it caused"), kv);
  }
  box.replaceChildren(...parts);
}

connect(`${base}/stream?view=engine`, render);
