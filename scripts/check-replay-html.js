// check-replay-html.js: open a `mocker-server replay --html` report in
// headless Chromium (puppeteer-core, no browser download) and check that
// every chart rendered: no console errors or page errors, no network
// requests, the expected number of canvases, each with painted pixels.
// The report's first screen holds the key figures and the first charts; a
// setup with rejected requests has a table of reasons whose counts add up
// to its rejected requests; a log-scale toggle turns its axis logarithmic;
// the running/waiting small multiples of one setup share one scale with
// whole-number ticks. Writes a full-page screenshot.
//
//   node scripts/check-replay-html.js REPORT.html SCREENSHOT.png MIN_CHARTS
"use strict";
const puppeteer = require("puppeteer-core");
const path = require("path");

async function main() {
  const [report, shot, minCharts] = process.argv.slice(2);
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const problems = [];
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    page.on("console", (m) => { if (m.type() === "error") problems.push("console error: " + m.text()); });
    page.on("pageerror", (e) => problems.push("page error: " + e.message));
    page.on("request", (r) => { if (!r.url().startsWith("file:")) problems.push("network request: " + r.url()); });
    await page.goto("file://" + path.resolve(report), { waitUntil: "load" });
    await page.waitForFunction("window.replayChartsReady === true", { timeout: 15000 });
    const canvases = await page.evaluate(() => Array.from(document.querySelectorAll("canvas")).map((c) => {
      const ctx = c.getContext("2d");
      const data = ctx.getImageData(0, 0, c.width, c.height).data;
      let painted = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++;
      return { label: c.getAttribute("aria-label"), width: c.width, height: c.height, painted };
    }));
    if (canvases.length < Number(minCharts)) problems.push(`${canvases.length} charts, want at least ${minCharts}`);
    for (const c of canvases) {
      if (c.width === 0 || c.height === 0 || c.painted < 500) problems.push(`chart "${c.label}" is empty (${c.width}x${c.height}, ${c.painted} painted pixels)`);
    }
    // The first screen: key figures and the first row of charts.
    const firstScreen = await page.evaluate(() => {
      const key = document.getElementById("key-summary").getBoundingClientRect();
      const chart = document.querySelector("#charts canvas").getBoundingClientRect();
      return { key: key.bottom, chart: chart.bottom, height: window.innerHeight };
    });
    if (firstScreen.key > firstScreen.height || firstScreen.chart > firstScreen.height) {
      problems.push(`the first chart ends at ${firstScreen.chart}px, the key figures at ${firstScreen.key}px: not on the first screen (${firstScreen.height}px)`);
    }
    const data = await page.evaluate(() => JSON.parse(document.getElementById("report-data").textContent));
    const tables = await page.$$eval(".rejections", (ds) => ds.map((d) => ({ title: d.querySelector("h2").textContent,
      counts: Array.from(d.querySelectorAll(".rejection-table tr")).slice(1).map((tr) => [tr.cells[0].textContent, Number(tr.cells[1].textContent)]) })));
    const rejecting = data.filter((r) => r.summary.rejected > 0);
    if (rejecting.length === 0) problems.push("no setup rejected requests: the check needs one that does");
    rejecting.forEach((r) => {
      const t = tables.find((x) => x.title.includes(" of " + r.label + " "));
      const sum = t ? t.counts.reduce((s, c) => s + c[1], 0) : -1;
      if (!t || sum !== r.summary.rejected) problems.push(`${r.label}: ${r.summary.rejected} rejected, the reasons table adds up to ${sum}`);
      else console.log(`${r.label}: ${r.summary.rejected} rejected, explained: ${JSON.stringify(t.counts)}`);
    });
    // The TTFT CDF's toggle flips its axis both ways (setups 10× apart
    // start logarithmic).
    const toggled = await page.evaluate(() => {
      const cb = document.querySelector("#charts input.log-x");
      const chart = Object.values(Chart.instances).find((c) => c.canvas.closest(".box") === cb.closest(".box"));
      const seen = [[cb.checked, chart.scales.x.type]];
      cb.click();
      seen.push([cb.checked, chart.scales.x.type]);
      cb.click();
      seen.push([cb.checked, chart.scales.x.type]);
      return seen;
    });
    if (!toggled.every(([on, type]) => type === (on ? "logarithmic" : "linear")) || toggled[0][0] === toggled[1][0]) {
      problems.push(`the log x toggle and the axis disagree: ${JSON.stringify(toggled)}`);
    } else console.log(`log x toggle: ${JSON.stringify(toggled)}`);
    const multiples = await page.evaluate(() => Object.values(Chart.instances)
      .filter((c) => c.canvas.closest(".multiples"))
      .map((c) => ({ label: c.canvas.getAttribute("aria-label"), max: c.scales.y.max, ticks: c.scales.y.ticks.map((t) => t.value) })));
    if (multiples.length !== data.reduce((n, r) => n + r.workers.length, 0)) problems.push(`${multiples.length} small multiples, want one per worker and setup`);
    data.forEach((r) => {
      const mine = multiples.filter((m) => m.label.endsWith(" — " + r.label));
      if (new Set(mine.map((m) => m.max)).size !== 1) problems.push(`${r.label}: the small multiples do not share one scale`);
      if (mine.some((m) => m.ticks.some((v) => !Number.isInteger(v)) || !m.ticks.includes(0))) problems.push(`${r.label}: count ticks are not whole numbers from 0`);
    });
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`${canvases.length} charts rendered: ${canvases.map((c) => c.label).join("; ")}`);
    console.log(`screenshot: ${shot}`);
  } finally {
    await browser.close();
  }
  if (problems.length) {
    for (const p of problems) console.error(p);
    process.exit(1);
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
