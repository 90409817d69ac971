// docs-screenshots.js: the screenshots of docs/ui.md and docs/replay.md,
// taken in headless Chromium (puppeteer-core) by scripts/docs-screenshots.sh.
//
//   node scripts/docs-screenshots.js page URL OUT.png WIDTH HEIGHT WAIT_MS
//   node scripts/docs-screenshots.js file REPORT.html OUT.png WIDTH HEIGHT
"use strict";
const puppeteer = require("puppeteer-core");
const path = require("path");

async function main() {
  const [kind, target, out, width, height, wait] = process.argv.slice(2);
  const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  const problems = [];
  try {
    const page = await browser.newPage();
    page.on("console", (m) => { if (m.type() === "error") problems.push("console error: " + m.text()); });
    page.on("pageerror", (e) => problems.push("page error: " + e.message));
    await page.setViewport({ width: Number(width), height: Number(height) });
    if (kind === "file") {
      await page.goto("file://" + path.resolve(target), { waitUntil: "load" });
      await page.waitForFunction("window.replayChartsReady === true", { timeout: 15000 });
    } else {
      const t0 = Date.now();
      await page.goto(target, { waitUntil: "domcontentloaded" });
      // The embedded snapshot paints before the stream connects.
      console.log(`${target}: first paint from the embedded snapshot in ${Date.now() - t0} ms`);
      await page.waitForFunction("window.uiUpdates >= 3", { timeout: 30000, polling: 250 });
      await new Promise((r) => setTimeout(r, Number(wait || 0)));
    }
    await page.screenshot({ path: out });
    console.log("screenshot: " + out);
  } finally {
    await browser.close();
  }
  if (problems.length) {
    for (const p of problems) console.error(p);
    process.exit(1);
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
