// Live progress of ranking runs: rows with data-progress-url poll while queued or running.
(function () {
  "use strict";
  function eta(seconds) {
    if (seconds === null || seconds === undefined) return "";
    if (seconds < 90) return ", about " + Math.round(seconds) + " s left";
    if (seconds < 5400) return ", about " + Math.round(seconds / 60) + " min left";
    return ", about " + (seconds / 3600).toFixed(1) + " h left";
  }
  function watch(row) {
    var url = row.getAttribute("data-progress-url");
    var timer = setInterval(function () {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (data) {
          if (!data) return;
          var bar = row.querySelector(".progress");
          if (bar) { bar.setAttribute("aria-valuenow", data.percent); bar.firstElementChild.style.width = data.percent + "%"; }
          var text = row.querySelector(".run-progress-text");
          if (text) text.textContent = data.percent + "% (" + data.chunks_done + " of " + data.chunks_total + " chunks)" + eta(data.eta_seconds);
          if (data.status !== "queued" && data.status !== "running") { clearInterval(timer); window.location.reload(); }
        })
        .catch(function () { /* a missed poll is retried on the next tick */ });
    }, 2000);
  }
  document.querySelectorAll("[data-progress-url]").forEach(function (row) {
    var status = row.getAttribute("data-status");
    if (status === "queued" || status === "running") watch(row);
  });
})();
