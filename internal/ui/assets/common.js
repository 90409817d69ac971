// common.js: what every page of the live UI shares — the stream
// connection and a tiny DOM helper. No build step: plain browser JS.
"use strict";

// connect opens the page's SSE stream and calls onUpdate with each parsed
// update. EventSource reconnects by itself after an error.
function connect(url, onUpdate) {
  const status = document.getElementById("status");
  const source = new EventSource(url);
  let updates = 0;
  source.onopen = () => { status.textContent = "live"; };
  source.onerror = () => { status.textContent = "reconnecting…"; };
  source.onmessage = (e) => {
    updates++;
    window.uiUpdates = updates; // read by the browser test
    onUpdate(JSON.parse(e.data));
    status.textContent = "live · " + new Date().toLocaleTimeString();
  };
  return source;
}

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
