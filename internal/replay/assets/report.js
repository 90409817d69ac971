// Draws the replay report's charts from the embedded JSON reports: CDFs and
// the scatter with log-scale toggles, the hit rate and KV usage over time,
// and per setup small multiples of each worker's running and waiting
// requests on one shared scale.
(function () {
  "use strict";
  var reports = JSON.parse(document.getElementById("report-data").textContent);
  var palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var charts = [];
  Chart.defaults.animation = false;

  // A value axis that starts a hair below its minimum, so that a line at
  // zero (or at one on a fraction axis) is drawn above the axis line
  // instead of under it; ticks outside [lo, hi] are not labelled.
  function valueAxis(title, lo, hi, integer) {
    var axis = { title: { display: true, text: title }, ticks: {} };
    if (lo === undefined) { return axis; }
    var top = hi !== undefined ? hi : lo + 1;
    var pad = (top - lo) * 0.03;
    axis.min = lo - pad;
    if (hi !== undefined) { axis.max = hi + pad; }
    // The ticks are ours: from lo to the top in a round step (whole
    // numbers for counts), none in the padding.
    axis.afterBuildTicks = function (scale) {
      var upper = hi !== undefined ? hi : scale.max;
      var raw = (upper - lo) / 5, mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
      var step = [1, 2, 2.5, 5, 10].map(function (m) { return m * mag; }).filter(function (x) { return x >= raw; })[0];
      if (integer) { step = Math.max(1, Math.round(step)); }
      var ticks = [];
      for (var v = lo; v <= upper + step * 1e-9; v += step) { ticks.push({ value: Math.round(v / step) * step }); }
      scale.ticks = ticks;
    };
    return axis;
  }

  // addChart draws one chart into parent. logAxes names the axes ("x",
  // "y") the box offers a log-scale toggle for; logOn those it starts with.
  function addChart(parent, title, type, datasets, x, y, logAxes, logOn, legend) {
    var box = document.createElement("div");
    box.className = "box";
    var tools = document.createElement("div");
    tools.className = "tools";
    box.appendChild(tools);
    var holder = document.createElement("div");
    holder.className = "chart";
    var canvas = document.createElement("canvas");
    canvas.setAttribute("aria-label", title);
    holder.appendChild(canvas);
    box.appendChild(holder);
    parent.appendChild(box);
    var linear = { x: x, y: y };
    var chart = new Chart(canvas, {
      type: type,
      data: { datasets: datasets },
      options: {
        responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
        plugins: { title: { display: true, text: title }, legend: { display: legend !== undefined ? legend : datasets.length > 1 } },
        elements: { point: { radius: type === "scatter" ? 2 : 0 }, line: { borderWidth: 1.8 } },
        scales: { x: Object.assign({ type: "linear" }, x), y: Object.assign({ type: "linear" }, y) }
      }
    });
    (logAxes || []).forEach(function (axis) {
      var label = document.createElement("label");
      var cb = document.createElement("input");
      cb.type = "checkbox";
      cb.className = "log-" + axis;
      label.appendChild(cb);
      label.appendChild(document.createTextNode(" log " + axis + " "));
      tools.appendChild(label);
      function apply() {
        var base = linear[axis];
        chart.options.scales[axis] = cb.checked
          ? { type: "logarithmic", title: base.title, ticks: { autoSkip: true, maxRotation: 0, callback: logTick } }
          : Object.assign({ type: "linear" }, base);
        chart.update();
      }
      cb.addEventListener("change", apply);
      if ((logOn || []).indexOf(axis) >= 0) { cb.checked = true; apply(); }
    });
    charts.push(chart);
    return chart;
  }
  // logTick labels 1, 2 and 5 times a power of ten, in plain numbers.
  // (only powers of ten when the axis spans more than three decades).
  function logTick(v) {
    var m = v / Math.pow(10, Math.floor(Math.log10(v)));
    var keep = this.max / this.min > 1000 ? [1] : [1, 2, 5];
    if (keep.indexOf(Math.round(m * 1000) / 1000) < 0) { return ""; }
    return v >= 1 ? v.toLocaleString("en-US") : String(Number(v.toPrecision(1)));
  }
  function points(pairs) { return (pairs || []).map(function (p) { return { x: p[0], y: p[1] }; }); }
  function overTime(values, width) { return (values || []).map(function (v, i) { return { x: (i + 0.5) * width, y: v }; }); }
  function color(i) { return palette[i % palette.length]; }
  // spread is how far apart the setups' medians of a CDF are (max / min).
  function spread(key) {
    var med = reports.map(function (r) {
      var pts = r.charts[key] || [];
      for (var i = 0; i < pts.length; i++) { if (pts[i][1] >= 0.5) { return pts[i][0]; } }
      return 0;
    }).filter(function (v) { return v > 0; });
    return med.length > 1 ? Math.max.apply(null, med) / Math.min.apply(null, med) : 1;
  }

  var grid = document.getElementById("charts");
  var ms = { title: { display: true, text: "milliseconds" } };
  [["ttft_cdf", "TTFT CDF"], ["itl_cdf", "ITL CDF"], ["e2e_cdf", "E2E latency CDF"]].forEach(function (m) {
    // Setups 10× apart or more: start on a log axis, or one curve hugs the
    // y axis.
    addChart(grid, m[1], "line", reports.map(function (r, i) {
      return { label: r.label, data: points(r.charts[m[0]]), borderColor: color(i), backgroundColor: color(i), stepped: true };
    }), ms, valueAxis("fraction of requests", 0, 1), ["x"], spread(m[0]) >= 10 ? ["x"] : []);
  });
  addChart(grid, "TTFT vs prompt length", "scatter", reports.map(function (r, i) {
    return { label: r.label, data: points(r.charts.ttft_vs_prompt), borderColor: color(i), backgroundColor: color(i) };
  }), { title: { display: true, text: "prompt tokens" } }, { title: { display: true, text: "TTFT (ms)" } }, ["x", "y"]);
  addChart(grid, "Prefix-cache hit rate over time", "line", reports.map(function (r, i) {
    return { label: r.label, data: overTime(r.timeline.hit_rate, r.timeline.bucket_s), borderColor: color(i), backgroundColor: color(i) };
  }), { title: { display: true, text: "simulated seconds" } }, valueAxis("hit rate", 0, 1));
  reports.forEach(function (r) {
    var tl = r.timeline;
    addChart(grid, "KV usage per worker — " + r.label, "line", r.workers.map(function (w, i) {
      return { label: w.name, data: overTime(tl.kv_usage[i], tl.bucket_s), borderColor: color(i), backgroundColor: color(i) };
    }), { title: { display: true, text: "simulated seconds" } }, valueAxis("KV usage (peak in bucket)", 0, 1));
  });

  // Small multiples: per setup, one chart per worker with its running and
  // waiting requests, all on the same count scale so that they compare at
  // a glance.
  var multiples = document.getElementById("multiples");
  reports.forEach(function (r) {
    var tl = r.timeline, top = 1;
    r.workers.forEach(function (w, i) {
      (tl.running[i] || []).concat(tl.waiting[i] || []).forEach(function (v) { top = Math.max(top, v); });
    });
    var h = document.createElement("h2");
    h.textContent = "Running (solid) and waiting (dashed) requests per worker — " + r.label;
    multiples.appendChild(h);
    var box = document.createElement("div");
    box.className = "multiples";
    multiples.appendChild(box);
    r.workers.forEach(function (w, i) {
      addChart(box, w.name + " — " + r.label, "line", [
        { label: "running", data: overTime(tl.running[i], tl.bucket_s), borderColor: color(0), backgroundColor: color(0) },
        { label: "waiting", data: overTime(tl.waiting[i], tl.bucket_s), borderColor: color(1), backgroundColor: color(1), borderDash: [4, 3] }
      ], { title: { display: false, text: "simulated seconds" } }, valueAxis("requests", 0, top, true), [], [], false);
    });
  });
  window.replayCharts = charts.length;
  window.replayChartsReady = true;
})();
