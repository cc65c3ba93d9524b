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
// Times the server wrote in UTC (<time datetime>) are shown in the viewer's own time zone; the UTC text
// stays as the element's title.
(function () {
  "use strict";
  document.querySelectorAll("time[datetime]").forEach(function (element) {
    var value = element.getAttribute("datetime");
    if (value.indexOf("T") < 0) { return; }
    var when = new Date(value);
    if (isNaN(when.getTime())) { return; }
    // Hours and minutes only where asked (data-style="time") or where the server wrote only those.
    var timeOnly = element.getAttribute("data-style") === "time" || /^\d\d:\d\d\b/.test(element.textContent.trim());
    var options = timeOnly
      ? { hour: "2-digit", minute: "2-digit" }
      : { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" };
    element.title = element.textContent.trim();
    element.textContent = when.toLocaleString(undefined, options);
  });
})();
// The top bar on a phone: its links fold behind a Menu button that opens and closes them.
(function () {
  "use strict";
  var header = document.querySelector("header.top");
  var toggle = header && header.querySelector(".menu-toggle");
  var links = header && header.querySelector(".nav-links");
  if (!toggle || !links) { return; }
  header.classList.add("js-menu");
  toggle.addEventListener("click", function () {
    var open = links.classList.toggle("open");
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  });
})();
