// Every page: progress bars take their width from data-percent (the Content-Security-Policy allows no
// inline style attributes, but a script may set element styles).
(function () {
  "use strict";
  document.querySelectorAll("[data-percent]").forEach(function (bar) {
    var percent = Math.max(0, Math.min(100, parseFloat(bar.getAttribute("data-percent")) || 0));
    bar.style.width = percent + "%";
  });
  // Read-only fields meant to be copied (the API token) select themselves when focused.
  document.querySelectorAll("[data-select-on-focus]").forEach(function (field) {
    field.addEventListener("focus", function () { field.select(); });
  });
})();
