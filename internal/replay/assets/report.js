// Draws the replay report's charts from the embedded JSON reports.
(function () {
  "use strict";
  var reports = JSON.parse(document.getElementById("report-data").textContent);
  var palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var grid = document.getElementById("charts");
  var charts = [];
  Chart.defaults.animation = false;

  function addChart(title, type, datasets, xTitle, yTitle, yMax) {
    var box = document.createElement("div");
    box.className = "chart";
    var canvas = document.createElement("canvas");
    canvas.setAttribute("aria-label", title);
    box.appendChild(canvas);
    grid.appendChild(box);
    var y = { title: { display: true, text: yTitle }, beginAtZero: true };
    if (yMax !== undefined) { y.max = yMax; }
    charts.push(new Chart(canvas, {
      type: type,
      data: { datasets: datasets },
      options: {
        responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
        plugins: { title: { display: true, text: title }, legend: { display: datasets.length > 1 } },
        elements: { point: { radius: type === "scatter" ? 2 : 0 }, line: { borderWidth: 1.5 } },
        scales: { x: { type: "linear", title: { display: true, text: xTitle } }, y: y }
      }
    }));
  }
  function points(pairs) { return (pairs || []).map(function (p) { return { x: p[0], y: p[1] }; }); }
  function overTime(values, width) { return (values || []).map(function (v, i) { return { x: (i + 0.5) * width, y: v }; }); }
  function color(i) { return palette[i % palette.length]; }

  [["ttft_cdf", "TTFT CDF"], ["itl_cdf", "ITL CDF"], ["e2e_cdf", "E2E latency CDF"]].forEach(function (m) {
    addChart(m[1], "line", reports.map(function (r, i) {
      return { label: r.label, data: points(r.charts[m[0]]), borderColor: color(i), backgroundColor: color(i), stepped: true };
    }), "milliseconds", "fraction of requests", 1);
  });
  addChart("TTFT vs prompt length", "scatter", reports.map(function (r, i) {
    return { label: r.label, data: points(r.charts.ttft_vs_prompt), borderColor: color(i), backgroundColor: color(i) };
  }), "prompt tokens", "TTFT (ms)");
  addChart("Prefix-cache hit rate over time", "line", reports.map(function (r, i) {
    return { label: r.label, data: overTime(r.timeline.hit_rate, r.timeline.bucket_s), borderColor: color(i), backgroundColor: color(i) };
  }), "simulated seconds", "hit rate", 1);
  reports.forEach(function (r) {
    var tl = r.timeline;
    addChart("KV usage per worker — " + r.label, "line", r.workers.map(function (w, i) {
      return { label: w.name, data: overTime(tl.kv_usage[i], tl.bucket_s), borderColor: color(i), backgroundColor: color(i) };
    }), "simulated seconds", "KV usage (peak in bucket)", 1);
    var queues = [];
    r.workers.forEach(function (w, i) {
      queues.push({ label: w.name + " running", data: overTime(tl.running[i], tl.bucket_s), borderColor: color(i), backgroundColor: color(i) });
      queues.push({ label: w.name + " waiting", data: overTime(tl.waiting[i], tl.bucket_s), borderColor: color(i), backgroundColor: color(i), borderDash: [4, 3] });
    });
    addChart("Running and waiting requests per worker — " + r.label, "line", queues, "simulated seconds", "requests (peak in bucket)");
  });
  window.replayCharts = charts.length;
  window.replayChartsReady = true;
})();
