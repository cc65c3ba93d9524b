// The correction HIT: A accepts, E edits, Ctrl+Enter submits the edit; the edit count is shown as you type.
(function () {
  "use strict";
  var form = document.getElementById("correction-form");
  if (!form) return;
  var text = document.getElementById("correction-text");
  var count = document.getElementById("edit-count");
  var seconds = document.getElementById("seconds-spent");
  var proposal = form.getAttribute("data-proposal") || "";
  var started = Date.now();

  function distance(a, b) {
    var previous = [], current, i, j;
    for (j = 0; j <= b.length; j++) previous.push(j);
    for (i = 1; i <= a.length; i++) {
      current = [i];
      for (j = 1; j <= b.length; j++) {
        current.push(Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1)));
      }
      previous = current;
    }
    return previous[b.length];
  }
  function squash(value) { return value.trim().split(/\s+/).join(" "); }
  function update() {
    var n = distance(squash(proposal), squash(text.value));
    count.textContent = n === 0 ? "No changes: submitting accepts the proposal." : n + " character" + (n === 1 ? "" : "s") + " changed.";
  }
  function submit(action) {
    seconds.value = ((Date.now() - started) / 1000).toFixed(1);
    var button = form.querySelector('button[value="' + action + '"]');
    if (button) form.requestSubmit(button);
  }
  text.addEventListener("input", update);
  form.addEventListener("submit", function () { seconds.value = ((Date.now() - started) / 1000).toFixed(1); });
  document.addEventListener("keydown", function (event) {
    if (text.disabled) return;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); submit("correct"); return; }
    if (document.activeElement === text) {
      if (event.key === "Escape") text.blur();
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "a" || event.key === "A") { event.preventDefault(); submit("accept"); }
    if (event.key === "e" || event.key === "E") {
      event.preventDefault();
      text.focus();
      text.setSelectionRange(text.value.length, text.value.length);
    }
  });
  update();
})();
