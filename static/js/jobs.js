// Background jobs: every [data-job-url] widget (templates/partials/job_progress.html) polls its status
// while the job is queued or running, moves its bar, and reloads the page once the job has ended.
(function () {
  "use strict";
  var ACTIVE = ["queued", "running"];
  function watch(widget) {
    var url = widget.getAttribute("data-job-url");
    var timer = setInterval(function () {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (job) {
          if (!job) return;
          var bar = widget.querySelector(".progress");
          if (bar) {
            bar.setAttribute("aria-valuenow", job.percent);
            bar.firstElementChild.style.width = job.percent + "%";
          }
          var text = widget.querySelector(".job-progress-text");
          if (text) text.textContent = job.percent + "%" + (job.total ? " (" + job.done + " of " + job.total + " " + job.unit + ")" : "");
          var state = widget.querySelector(".job-state");
          if (state) state.textContent = job.state_display;
          if (ACTIVE.indexOf(job.state) < 0) { clearInterval(timer); window.location.reload(); }
        })
        .catch(function () { /* a missed poll is retried on the next tick */ });
    }, 2000);
  }
  document.querySelectorAll("[data-job-url]").forEach(function (widget) {
    if (ACTIVE.indexOf(widget.getAttribute("data-job-state")) >= 0) watch(widget);
  });
})();
