// ringcrawl's dashboard page (ring/dashboard.py). Every poll it swaps in the
// tables the server rendered (all crawl data escaped there) and redraws the
// plots from /series.json, numbers and member ids only (uPlot writes labels
// with textContent). No crawl data is put into markup here.
"use strict";
(function () {
  const every = Math.max(0.2, parseFloat(document.body.dataset.interval || "2")) * 1000;
  const colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const plots = {};
  let updates = 0;

  function width(el) {
    return Math.max(300, el.clientWidth || 480);
  }

  function plot(id, title, names, data) {
    const el = document.getElementById(id);
    const key = names.join("\u0000");
    let p = plots[id];
    if (p && p.key !== key) {
      p.chart.destroy();
      p = null;
    }
    if (!p) {
      const series = [{}].concat(names.map((name, i) => ({
        label: name, stroke: i === 0 ? "#000" : colours[(i - 1) % colours.length],
        width: i === 0 ? 2 : 1, spanGaps: false,
      })));
      const opts = {width: width(el), height: 220, series: series,
                    axes: [{}, {label: title}], scales: {x: {time: true}}};
      p = plots[id] = {key: key, chart: new uPlot(opts, data, el)};
    } else {
      p.chart.setData(data);
    }
  }

  function draw(s) {
    if (!s.t || s.t.length === 0) {
      return;
    }
    plot("plot-rate", "pages/s", ["total"].concat(s.members), [s.t, s.total_rate].concat(s.rate));
    plot("plot-queued", "URLs", ["queued (all peers)"], [s.t, s.queued]);
  }

  async function tick() {
    try {
      const [fragment, series] = await Promise.all([
        fetch("/fragment", {cache: "no-store"}).then((r) => r.text()),
        fetch("/series.json", {cache: "no-store"}).then((r) => r.json()),
      ]);
      document.getElementById("tables").innerHTML = fragment;
      draw(series);
      updates += 1;
      document.getElementById("updates").textContent = String(updates);
    } catch (err) {
      // The dashboard process went away or is busy: try again next round.
    }
    setTimeout(tick, every);
  }

  tick();
})();
