// check-ui.js: the live UI (docs/ui.md) in headless Chromium against real
// servers. Requests with a shared prefix go through the OpenAI SDK (npm
// `openai`); every assertion reads the DOM:
//  - engine page: the running queue lists the streaming requests; with the
//    worker paused (admin API) the KV grid's in-use count equals
//    /metrics' kv_cache_usage_perc × num_gpu_blocks, and paused and idle
//    its in-use / cached / free counts equal mocker_kv_cache_blocks;
//  - requests page: every request id is in the table, and a request's
//    timeline has one tick per output token;
//  - fleet page (64 workers): every tile updates; the browser's CPU use is
//    reported (FLEET_CPU_MAX, default 20 % of one core, is enforced);
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
  check(ids.every((id) => running.includes(id)) && ids.length === 6, `running queue shows the 6 streaming requests (${running.length} rows)`);

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
  await page.screenshot({ path: path.join(out, "engine.png") });
  await fetch(admin + "/workers/0/resume", { method: "POST" });
  await Promise.all(streams);

  await page.waitForFunction(() => document.querySelector(".kv-in-use").textContent === "0", { timeout: 10000 });
  const idle = await sameCounts(page);
  check(JSON.stringify(idle.got) === JSON.stringify(idle.want) && idle.got.cached > 0 && idle.got.cached + idle.got.free === blocks,
    `idle: KV grid ${JSON.stringify(idle.got)} = mocker_kv_cache_blocks ${JSON.stringify(idle.want)}, cached > 0, sum ${blocks}`);
  const hit = await page.$eval(".hit-rate", (e) => Number(e.textContent));
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
  const max = Number(process.env.FLEET_CPU_MAX || 20);
  check(100 * cpu < max, `fleet page CPU ${(100 * cpu).toFixed(1)} % < ${max} % of one core`);
  await page.screenshot({ path: path.join(out, "fleet.png") });
  await Promise.all(load);
  const missing = await fetch(fleetAdmin + "/ui/worker/no-such-worker");
  check(missing.status === 404 && (await missing.text()).includes('id="message"'), "unknown worker id answers the 404 page");
  await page.close();
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
  console.log("screenshots: " + ["engine.png", "requests.png", "fleet.png"].map((f) => path.join(out, f)).join(" "));
}
main().catch((e) => { console.error(e); process.exit(1); });
