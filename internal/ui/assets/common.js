// common.js: what every page of the live UI shares — the stream
// connection, number and time formats, and a tiny DOM helper. No build
// step: plain browser JS.
"use strict";

// connect renders the update embedded in the page at once (the first paint
// does not wait for the stream), then opens the page's SSE stream and
// calls onUpdate with each parsed update. EventSource reconnects by itself
// after an error.
function connect(url, onUpdate) {
  const status = document.getElementById("status");
  const initial = document.getElementById("initial");
  if (initial && initial.textContent.trim()) {
    const u = JSON.parse(initial.textContent);
    onUpdate(u);
    status.textContent = "snapshot " + fmtClock(u.time || Date.now()) + " · connecting…";
  }
  const source = new EventSource(url);
  let updates = 0;
  source.onopen = () => { status.textContent = "live"; };
  source.onerror = () => { status.textContent = "reconnecting…"; };
  source.onmessage = (e) => {
    updates++;
    window.uiUpdates = updates; // read by the browser test
    const u = JSON.parse(e.data);
    onUpdate(u);
    status.textContent = "live · " + fmtClock(u.time || Date.now());
  };
  return source;
}

// The one time format of every page: 24-hour local clock time.
const pad2 = (n) => String(n).padStart(2, "0");
function fmtClock(ms) {
  const d = new Date(ms);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

// Numbers: counts with thousands separators, durations in ms with one
// decimal, percentages with one decimal, rates by size.
const intFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
function fmtInt(n) { return intFmt.format(n); }
function fmtMs(x) { return x === null || x === undefined || Number.isNaN(x) ? "—" : x.toFixed(1) + " ms"; }
function fmtMsBare(x) { return x === null || x === undefined || Number.isNaN(x) ? "—" : x.toFixed(1); }
function fmtPct(x) { return x.toFixed(1) + " %"; }
function fmtTokS(x) { return fmtInt(x) + " tok/s"; }
function fmtReqS(x) { return x.toFixed(1) + " req/s"; }

// el creates an element with text content and optional attributes.
function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

// fillBody replaces a tbody's rows with one row per item.
function fillBody(tbody, items, row) {
  const frag = document.createDocumentFragment();
  for (const it of items) frag.appendChild(row(it));
  tbody.replaceChildren(frag);
}
