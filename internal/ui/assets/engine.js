// engine.js: the engine and requests pages of one worker. Each stream
// update is a whole snapshot (see docs/ui.md): KV grid codes per rank, the
// queues, the last passes, latency percentiles, throughput and the
// requests table.
"use strict";

const base = document.body.dataset.base;
const ranks = new Map(); // rank number -> its DOM and charts
let lastUpdate = null;
let selected = null; // request id shown in the timeline

// Block colors: free, cached (evictable), in use shaded by reference count.
const FREE = "#ffffff", CACHED = "#fbbf24", IN_USE = "#2563eb";
function inUseColor(refs) { return `hsl(217, 83%, ${Math.max(28, 62 - refs * 6)}%)`; }
// The grid draws at most MAX_CELLS cells: a larger pool shows groups of
// blocks per cell (a power of two), each filled in proportion to its
// in-use, cached and free blocks; a click zooms into one window of
// MAX_CELLS single blocks.
const MAX_CELLS = 2048;

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

// Chart axes: clock times in the page's one format, counts without
// fractions.
// Ticks at whole seconds only, so that no two show the same clock time.
const timeAxis = { space: 70, incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600],
  values: (u, vals) => vals.map((v) => fmtClock(v * 1000)) };
function countAxis(label, side) {
  return { scale: label, label, side, size: 60, values: (u, vals) => vals.map((v) => (Number.isInteger(v) ? fmtInt(v) : "")) };
}
// Counts start at zero, so that a flat line reads as what it is.
const fromZero = { range: (u, min, max) => [0, Math.max(1, max) * 1.1] };
const countValue = (u, x) => (x === null || x === undefined ? "—" : fmtInt(x));
const clockValue = (u, t) => (t === null || t === undefined ? "—" : fmtClock(t * 1000));

function rankView(r) {
  if (ranks.has(r)) return ranks.get(r);
  const node = document.getElementById("rank-template").content.cloneNode(true);
  const wrap = el("div", null, { id: "rank-" + r, class: "rank" });
  wrap.appendChild(node);
  document.getElementById("ranks").appendChild(wrap);
  wrap.querySelector(".rank-no").textContent = r;
  const q = (s) => wrap.querySelector(s);
  const v = { wrap, q, grid: q(".kv-grid"), rle: "", blocks: "", numBlocks: 0, cols: 1, cell: 8, group: 1, zoom: -1 };
  v.grid.addEventListener("mousemove", (e) => hoverBlock(v, r, e));
  v.grid.addEventListener("mouseleave", () => { document.getElementById("tooltip").style.display = "none"; });
  v.grid.addEventListener("click", (e) => zoomGrid(v, e));
  q(".show-evict").addEventListener("change", () => lastUpdate && renderRank(lastUpdate.ranks.find((x) => x.rank === r)));
  const width = () => Math.max(300, q(".chart-batch").clientWidth || 500);
  v.batchChart = new uPlot({ width: width(), height: 170, scales: { x: { time: true }, sequences: fromZero, tokens: fromZero },
    axes: [timeAxis, countAxis("sequences", 3), { ...countAxis("tokens", 1), grid: { show: false } }],
    series: [{ label: "time", value: clockValue },
      { label: "batch (sequences)", stroke: "#2563eb", scale: "sequences", width: 1.5, value: countValue },
      { label: "prefill tokens", stroke: "#f59e0b", scale: "tokens", width: 1.5, value: countValue },
      { label: "decode tokens", stroke: "#10b981", scale: "tokens", width: 1.5, value: countValue }] }, [[], [], [], []], q(".chart-batch"));
  v.timeChart = new uPlot({ width: width(), height: 170, scales: { x: { time: true }, y: fromZero },
    axes: [timeAxis, { label: "ms", size: 60, values: (u, vals) => vals.map((x) => x.toFixed(1)) }],
    series: [{ label: "time", value: clockValue },
      { label: "modeled", stroke: "#6366f1", value: (u, x) => fmtMs(x) },
      { label: "actual", stroke: "#ef4444", value: (u, x) => fmtMs(x) }] },
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

// gridWindow returns the blocks the grid shows: the whole pool, or the
// zoomed window.
function gridWindow(v) {
  if (v.zoom < 0) return { start: 0, end: v.numBlocks };
  return { start: v.zoom, end: Math.min(v.numBlocks, v.zoom + MAX_CELLS) };
}

function drawGrid(v) {
  const blocks = v.blocks, n = blocks.length, c = v.grid;
  const { start, end } = gridWindow(v);
  const shown = end - start;
  v.group = 1;
  while (shown / v.group > MAX_CELLS) v.group *= 2;
  const cells = Math.ceil(shown / v.group);
  const box = c.parentElement, cs = getComputedStyle(box);
  const width = Math.max(200, Math.floor(box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)));
  v.cell = cells <= 512 ? 14 : cells <= 1024 ? 11 : 9;
  v.cols = Math.max(1, Math.floor(width / v.cell));
  const height = Math.ceil(cells / v.cols) * v.cell;
  if (c.width !== width || c.height !== height) { c.width = width; c.height = height; }
  const ctx = c.getContext("2d");
  ctx.fillStyle = "#e5e7eb";
  ctx.fillRect(0, 0, c.width, c.height);
  const gap = 1, size = v.cell - gap;
  for (let i = 0; i < cells; i++) {
    const x = (i % v.cols) * v.cell, y = Math.floor(i / v.cols) * v.cell;
    const from = start + i * v.group, to = Math.min(end, from + v.group);
    if (v.group === 1) {
      const code = blocks[from];
      ctx.fillStyle = code === "." ? FREE : code === "c" ? CACHED : inUseColor(code.charCodeAt(0) - 64);
      ctx.fillRect(x, y, size, size);
      continue;
    }
    let use = 0, cached = 0;
    for (let b = from; b < to; b++) {
      const code = blocks[b];
      if (code === "c") cached++;
      else if (code !== ".") use++;
    }
    // Bottom up: in use, cached, free, in proportion.
    const total = to - from, hu = Math.round((size * use) / total), hc = Math.round((size * cached) / total);
    ctx.fillStyle = FREE;
    ctx.fillRect(x, y, size, size);
    if (hc) { ctx.fillStyle = CACHED; ctx.fillRect(x, y + size - hu - hc, size, hc); }
    if (hu) { ctx.fillStyle = IN_USE; ctx.fillRect(x, y + size - hu, size, hu); }
  }
  const note = v.q(".grid-note");
  note.replaceChildren();
  if (v.zoom >= 0) {
    note.append(`blocks ${fmtInt(start)}–${fmtInt(end - 1)} of ${fmtInt(n)}, one per cell · `);
    const back = el("a", "whole pool", { href: "#" });
    back.addEventListener("click", (e) => { e.preventDefault(); v.zoom = -1; drawGrid(v); });
    note.append(back);
  } else if (v.group > 1) {
    note.textContent = `${fmtInt(n)} blocks, ${v.group} per cell (filled in proportion: in use, cached, free) · click a cell to zoom in`;
  } else {
    note.textContent = n ? `${fmtInt(n)} blocks, one per cell` : "no block pool (SGLang's radix cache)";
  }
}

function cellAt(v, e) {
  const rect = v.grid.getBoundingClientRect();
  const col = Math.floor((e.clientX - rect.left) / v.cell), row = Math.floor((e.clientY - rect.top) / v.cell);
  const { start, end } = gridWindow(v);
  const from = start + (row * v.cols + col) * v.group;
  if (col >= v.cols || from >= end) return null;
  return { from, to: Math.min(end, from + v.group) };
}

function zoomGrid(v, e) {
  const c = cellAt(v, e);
  if (!c || v.group === 1) return;
  v.zoom = Math.max(0, Math.min(v.numBlocks - MAX_CELLS, c.from - MAX_CELLS / 2));
  v.zoom -= v.zoom % 16;
  drawGrid(v);
}

let hoverTimer = null;
function hoverBlock(v, rank, e) {
  const tip = document.getElementById("tooltip");
  const c = cellAt(v, e);
  if (!c) { tip.style.display = "none"; return; }
  tip.style.left = e.clientX + 12 + "px";
  tip.style.top = e.clientY + 12 + "px";
  clearTimeout(hoverTimer);
  if (v.group > 1) {
    let use = 0, cached = 0;
    for (let b = c.from; b < c.to; b++) { const code = v.blocks[b]; if (code === "c") cached++; else if (code !== ".") use++; }
    tip.replaceChildren(el("div", `blocks ${fmtInt(c.from)}–${fmtInt(c.to - 1)}`),
      el("div", `in use ${use} · cached ${cached} · free ${c.to - c.from - use - cached}`), el("div", "click to zoom in"));
    tip.style.display = "block";
    return;
  }
  const block = c.from;
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

// progress is a bar with its numbers written over it.
function progress(done, total, kind) {
  const bar = el("span", null, { class: "bar " + kind });
  const fill = el("i");
  fill.style.width = (total ? Math.min(100, (100 * done) / total) : 0) + "%";
  bar.append(fill, el("em", `${fmtInt(done)} / ${fmtInt(total)}`));
  const cell = el("td");
  cell.appendChild(bar);
  return cell;
}

// A queue row: [id, prompt, computed, generated, planned, preemptions, preempted].
function queueRow(s) {
  const tr = el("tr", null, { "data-id": s[0] });
  tr.appendChild(el("td", s[0], { class: "id", title: s[0] }));
  tr.appendChild(progress(Math.min(s[2], s[1]), s[1], "prefill"));
  tr.appendChild(progress(s[3], s[4], "output"));
  tr.appendChild(el("td", s[5] ? s[5] + (s[6] ? " (now)" : "") : ""));
  tr.addEventListener("click", () => { showTab("requests"); showRequest(s[0]); });
  return tr;
}

// fillQueue lists the first QUEUE_ROWS requests of a queue and counts the
// rest: hundreds of rows rebuilt ten times a second would cost the page
// more than the few a scroll box shows are worth.
const QUEUE_ROWS = 60;
function fillQueue(tbody, seqs, total) {
  fillBody(tbody, seqs.slice(0, QUEUE_ROWS), queueRow);
  if (total > QUEUE_ROWS) {
    const tr = el("tr", null, { class: "more" });
    tr.appendChild(el("td", `… and ${fmtInt(total - QUEUE_ROWS)} more`, { colspan: 4 }));
    tbody.appendChild(tr);
  }
}

function pct(part, whole) { return whole ? (100 * part) / whole : 0; }

function renderRank(rk) {
  if (!rk) return;
  const v = rankView(rk.rank), q = v.q;
  if (rk.blocks_rle !== v.rle) {
    v.rle = rk.blocks_rle;
    v.blocks = expandRLE(rk.blocks_rle);
    v.numBlocks = v.blocks.length;
    if (v.zoom >= v.numBlocks) v.zoom = -1;
    drawGrid(v);
  }
  // SGLang keeps its KV in a radix cache of pages, not the block pool.
  const pool = rk.num_blocks > 0;
  for (const sel of [".kv-grid", ".poolbar", ".legend"]) q(sel).classList.toggle("hidden", !pool);
  if (!pool) q(".grid-note").textContent = "no block grid: this engine keeps its KV in SGLang's radix cache of pages";
  const usage = pct(rk.in_use, rk.num_blocks);
  q(".kv-pct").textContent = pool ? fmtPct(usage) : "—";
  q(".kv-pct").dataset.value = usage;
  q(".pb-use").style.width = usage + "%";
  q(".pb-cached").style.left = usage + "%";
  q(".pb-cached").style.width = pct(rk.cached, rk.num_blocks) + "%";
  q(".kv-in-use").textContent = rk.in_use;
  q(".kv-cached").textContent = rk.cached;
  q(".kv-free").textContent = rk.free;
  q(".hit-rate").textContent = fmtPct(100 * rk.hit_rate);
  q(".n-running").textContent = rk.num_running;
  q(".n-waiting").textContent = rk.num_waiting + (rk.sleeping ? "; engine asleep, level " + rk.sleep_level : "");
  fillQueue(q("table.running tbody"), rk.running || [], rk.num_running);
  fillQueue(q("table.waiting tbody"), rk.waiting || [], rk.num_waiting);
  const p = rk.passes, t = p.t || [];
  v.batchChart.setData([t, p.batch || [], p.prefill || [], p.decode || []]);
  v.timeChart.setData([t, p.modeled_ms || [], p.actual_ms || []]);
  fillBody(q("table.latency tbody"), [["ttft", "TTFT"], ["itl", "ITL (mean per request)"], ["e2e", "e2e"]], ([k, name]) => {
    const tr = el("tr");
    tr.appendChild(el("th", name));
    for (const x of rk.latency[k]) tr.appendChild(el("td", fmtMsBare(x), { class: "num" }));
    return tr;
  });
  q(".totals").textContent = `passes ${fmtInt(rk.totals.passes)} · preemptions ${fmtInt(rk.totals.preemptions)} · evicted blocks ${fmtInt(rk.totals.evictions)}`;
  const evictions = q(".show-evict").checked;
  const lines = (rk.feed || []).filter((f) => evictions || f[1] !== "evict").reverse();
  const feed = q(".feed");
  feed.replaceChildren(...lines.map((f) => el("div", fmtClock(f[0]) + "  " + f[2], { class: "fl fl-" + f[1] })));
  if (!lines.length) feed.textContent = "none yet";
}

// renderServer fills the header and the worker's summary strip.
function renderServer(u) {
  const s = u.server || {};
  if (s.address) {
    const pool = s.num_blocks ? ` · ${fmtInt(s.num_blocks)} ${s.engine_type === "sglang" ? "pages" : "blocks"} × ${s.block_size} = ${fmtInt(s.num_blocks * s.block_size)} tokens per rank` : "";
    document.getElementById("server").textContent =
      `${s.address} · ${s.engine_type}${s.role && s.role !== "aggregated" ? " · " + s.role : ""} · DP ${s.dp_size}${pool}`;
  }
  let inUse = 0, blocks = 0, running = 0, waiting = 0;
  for (const rk of u.ranks) { inUse += rk.in_use; blocks += rk.num_blocks; running += rk.num_running; waiting += rk.num_waiting; }
  const usage = pct(inUse, blocks);
  const set = (id, text, value) => { const e = document.getElementById(id); e.textContent = text; e.dataset.value = value; };
  set("kv-usage", blocks ? fmtPct(usage) : "—", usage);
  set("tok-s", fmtTokS(u.rate.tokens_per_s), u.rate.tokens_per_s);
  set("req-s", fmtReqS(u.rate.requests_per_s), u.rate.requests_per_s);
  set("running", fmtInt(running), running);
  set("waiting", fmtInt(waiting), waiting);
  set("out-total", fmtInt(u.rate.output_tokens), u.rate.output_tokens);
  set("fin-total", fmtInt(u.rate.finished), u.rate.finished);
}

const numCols = new Set([2, 3, 4, 6, 7, 8]);
let shownRequests = "";
function renderRequests(u) {
  const f = document.getElementById("filter").value.trim().toLowerCase();
  const rows = f ? u.requests.filter((r) => r.some((c) => String(c ?? "").toLowerCase().includes(f))) : u.requests;
  // Rebuild the rows only when they changed: an update that only moved
  // the throughput must not replace the row under the pointer.
  const key = JSON.stringify(rows);
  if (key === shownRequests) return;
  shownRequests = key;
  fillBody(document.querySelector("#requests tbody"), rows, (r) => {
    const tr = el("tr", null, { "data-id": r[0] });
    r.forEach((c, i) => {
      const text = i >= 6 && i <= 8 ? fmtMsBare(c) : c ?? "—";
      tr.appendChild(el("td", text, numCols.has(i) ? { class: "num" } : i === 0 ? { class: "id", title: c } : undefined));
    });
    tr.addEventListener("click", () => showRequest(r[0]));
    return tr;
  });
}

function render(u) {
  lastUpdate = u;
  renderServer(u);
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
    v.batchChart.setSize({ width, height: 170 });
    v.timeChart.setSize({ width, height: 170 });
    if (v.rle) drawGrid(v);
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
    parts.push(el("p", `rank ${s.rank} · engine id ${s.engine_id} · ${s.state}${s.finish_reason ? " (" + s.finish_reason + ")" : ""} · prompt ${s.prompt_tokens} tok · cached ${s.cached_tokens} tok · output ${s.output_tokens} / ${s.planned_tokens} tok · preemptions ${s.preemptions}`, { class: "summary" }));
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
    parts.push(el("p", `${s.token_ms.length} tokens over ${fmtMs(end)} after arrival${s.dropped ? " · " + s.dropped + " not kept" : ""}`, { class: "muted tokens" }));
    const ev = el("table", null, { class: "events" });
    fillBody(ev.appendChild(el("tbody")), s.events, (e) => {
      const tr = el("tr");
      tr.append(el("td", fmtMs(e.t), { class: "num" }), el("td", e.kind), el("td", e.n || e.text || ""));
      return tr;
    });
    parts.push(ev);
    const kv = el("div", null, { class: "feed kv" });
    kv.textContent = s.kv_events.length ? s.kv_events.map((k) => `${fmtMs(k.t)} ${k.kind} ${k.hashes.join(" ")}`).join("\n") : "no KV events attributed";
    parts.push(el("h2", "KV events it caused"), kv);
  }
  box.replaceChildren(...parts);
}

connect(`${base}/stream?view=engine`, render);
