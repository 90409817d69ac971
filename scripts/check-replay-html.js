// check-replay-html.js: open a `mocker-server replay --html` report in
// headless Chromium (puppeteer-core, no browser download) and check that
// every chart rendered: no console errors or page errors, no network
// requests, the expected number of canvases, each with painted pixels.
// Writes a full-page screenshot.
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
