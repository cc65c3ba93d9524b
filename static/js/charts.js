// Charts: every [data-chart] figure names the kind of chart and, in data-source, the id of the json_script
// element that holds its series (annotator/quality/selectors/charts.py). Chart.js is vendored in
// static/vendor/chartjs; nothing here is inline, so the Content-Security-Policy stays strict.
// Each figure keeps a table beside it: the chart is for people who would rather look.
(function () {
  "use strict";
  if (typeof window.Chart === "undefined") return;
  var Chart = window.Chart;
  // Colour-blind safe (Okabe-Ito), dark enough on white.
  var COLOURS = ["#0072B2", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#56B4E9", "#8a6d00", "#000000", "#999999", "#6a3d9a"];
  Chart.defaults.animation = false;
  Chart.defaults.font.family = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
  Chart.defaults.color = "#1b1f24";

  function percentAxis(extra) {
    var axis = { min: 0, max: 1, ticks: { callback: function (v) { return Math.round(v * 100) + "%"; } } };
    return Object.assign(axis, extra || {});
  }
  function percentLabel(context) {
    var v = context.chart.options.indexAxis === "y" ? context.parsed.x : context.parsed.y;
    return context.dataset.label + ": " + (v === null || v === undefined ? "-" : (v * 100).toFixed(1) + "%");
  }

  // Draws each bar's estimate (dataset.estimates) as a dark line across the bar.
  var ESTIMATES = {
    id: "estimates",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, y = chart.scales.y;
      chart.data.datasets.forEach(function (dataset, i) {
        if (!dataset.estimates || !chart.isDatasetVisible(i)) return;
        chart.getDatasetMeta(i).data.forEach(function (bar, j) {
          var value = dataset.estimates[j];
          if (value === null || value === undefined) return;
          var py = y.getPixelForValue(value);
          ctx.save();
          ctx.strokeStyle = dataset.borderColor;
          ctx.lineWidth = 3;
          ctx.beginPath();
          ctx.moveTo(bar.x - bar.width / 2, py);
          ctx.lineTo(bar.x + bar.width / 2, py);
          ctx.stroke();
          ctx.restore();
        });
      });
    }
  };

  var BUILDERS = {
    // Assignments submitted and approved per bucket (bars), and in all (lines, right axis).
    throughput: function (d) {
      return {
        data: {
          labels: d.labels,
          datasets: [
            { type: "bar", label: "Submitted", data: d.submitted, backgroundColor: COLOURS[0], yAxisID: "y", order: 1 },
            { type: "bar", label: "Approved", data: d.approved, backgroundColor: COLOURS[1], yAxisID: "y", order: 1 },
            // The running totals are drawn over the bars (lower order on top), hollow so they read apart.
            { type: "line", label: "Submitted in all", data: d.total_submitted, borderColor: "#1b1f24", backgroundColor: "#fff", borderWidth: 2, yAxisID: "total", order: 0 },
            { type: "line", label: "Approved in all", data: d.total_approved, borderColor: "#8a6d00", backgroundColor: "#fff", borderWidth: 2, yAxisID: "total", order: 0 }
          ]
        },
        options: {
          scales: {
            y: { beginAtZero: true, title: { display: true, text: "per " + d.unit }, ticks: { precision: 0 } },
            total: { position: "right", beginAtZero: true, title: { display: true, text: "in all" }, grid: { drawOnChartArea: false }, ticks: { precision: 0 } }
          }
        }
      };
    },
    // Spend in all over time (cents), with the budget as a flat dashed line when the campaign has one.
    spend: function (d) {
      var dollars = function (cents) { return cents === null ? null : cents / 100; };
      var datasets = [
        { label: "Spent in all", data: d.spent.map(dollars), borderColor: COLOURS[0], backgroundColor: COLOURS[0], borderWidth: 2, stepped: true }
      ];
      if (d.budget !== null && d.budget !== undefined) {
        datasets.push({ label: "Budget", data: d.labels.map(function () { return dollars(d.budget); }), borderColor: COLOURS[3], backgroundColor: COLOURS[3], borderDash: [6, 4], borderWidth: 2, pointRadius: 0 });
      }
      return {
        type: "line",
        data: { labels: d.labels, datasets: datasets },
        options: {
          scales: { y: { beginAtZero: true, title: { display: true, text: "US dollars" }, ticks: { callback: function (v) { return "$" + v.toLocaleString(); } } } },
          plugins: { tooltip: { callbacks: { label: function (c) { return c.dataset.label + ": $" + c.parsed.y.toFixed(2); } } } }
        }
      };
    },
    // A histogram of seconds per item.
    histogram: function (d) {
      return {
        type: "bar",
        data: { labels: d.labels, datasets: [{ label: "Answers", data: d.counts, backgroundColor: COLOURS[0], categoryPercentage: 1, barPercentage: 0.95 }] },
        options: {
          plugins: { legend: { display: false } },
          scales: { x: { title: { display: true, text: "seconds per item" } }, y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "answers" } } }
        }
      };
    },
    // Approval and gold accuracy per worker: a floating bar spans the Wilson interval, a dark line across it
    // marks the rate (the estimates plugin below draws it).
    intervals: function (d) {
      return {
        type: "bar",
        data: {
          labels: d.labels,
          datasets: [
            { label: "Approval rate, 95% interval", data: d.approval_interval, estimates: d.approval, backgroundColor: "rgba(0,114,178,0.35)", borderColor: COLOURS[0], borderWidth: 1 },
            { label: "Gold accuracy, 95% interval", data: d.gold_interval, estimates: d.gold, backgroundColor: "rgba(213,94,0,0.3)", borderColor: COLOURS[3], borderWidth: 1 }
          ]
        },
        options: {
          scales: { y: percentAxis() },
          plugins: {
            tooltip: {
              callbacks: {
                label: function (context) {
                  var raw = context.raw, rate = context.dataset.estimates[context.dataIndex];
                  if (!Array.isArray(raw)) return context.dataset.label + ": -";
                  return context.dataset.label + ": " + (rate * 100).toFixed(1) + "% (" + (raw[0] * 100).toFixed(1) + "% to " + (raw[1] * 100).toFixed(1) + "%)";
                }
              }
            }
          }
        },
        plugins: [ESTIMATES]
      };
    },
    // Table B.2: shares of each answer per rank, stacked to 100%.
    stacked: function (d) {
      return {
        type: "bar",
        data: {
          labels: d.labels,
          datasets: d.series.map(function (s, i) { return { label: s.label, data: s.data, backgroundColor: COLOURS[i % COLOURS.length] }; })
        },
        options: {
          scales: { x: { stacked: true }, y: percentAxis({ stacked: true }) },
          plugins: { tooltip: { callbacks: { label: percentLabel } } }
        }
      };
    },
    // Table B.3: one group of bars per error type, one bar per annotator; lying down, so the long names of
    // the shortcomings read level.
    grouped: function (d) {
      return {
        type: "bar",
        data: {
          labels: d.labels,
          datasets: d.rows.map(function (row, i) { return { label: row.annotator, data: row.shares, backgroundColor: COLOURS[i % COLOURS.length] }; })
        },
        options: {
          indexAxis: "y",
          scales: { x: percentAxis({ max: undefined, suggestedMax: 0.5 }) },
          plugins: { tooltip: { callbacks: { label: percentLabel } } }
        }
      };
    }
  };

  document.querySelectorAll("[data-chart]").forEach(function (figure) {
    var build = BUILDERS[figure.getAttribute("data-chart")];
    var source = document.getElementById(figure.getAttribute("data-source"));
    var canvas = figure.querySelector("canvas");
    if (!build || !source || !canvas) return;
    var config = build(JSON.parse(source.textContent));
    config.options = Object.assign({ responsive: true }, config.options);
    var chart = new Chart(canvas, config);
    figure.setAttribute("data-chart-drawn", "true");
    figure.chart = chart;
  });
})();
