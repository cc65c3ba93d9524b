// The qualification test: the same keys as the HIT page. 1-4 (0-5 on a similarity test) answer the
// current question and move to the next; j/k move between questions (arrow keys keep moving within a question, as radio buttons do). The current
// question is the one holding the focus, else the first unanswered one. No build step, no library.
(function () {
  "use strict";
  const form = document.getElementById("qualification-form");
  if (!form) return;
  const items = Array.prototype.slice.call(form.querySelectorAll(".item"));
  if (!items.length) return;
  const similarity = form.dataset.scale === "similarity";

  function answered(item) { return !!item.querySelector("input[type=radio]:checked"); }
  function currentIndex() {
    const holder = document.activeElement && document.activeElement.closest ? document.activeElement.closest(".item") : null;
    if (holder && items.indexOf(holder) >= 0) return items.indexOf(holder);
    const open = items.findIndex(function (item) { return !answered(item); });
    return open >= 0 ? open : items.length - 1;
  }
  function show(index) {
    const item = items[Math.max(0, Math.min(items.length - 1, index))];
    const radio = item.querySelector("input[type=radio]:checked") || item.querySelector("input[type=radio]");
    items.forEach(function (other) { other.classList.toggle("current", other === item); });
    if (radio) radio.focus();
    item.scrollIntoView({ block: "center" });
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const zoom = document.getElementById("zoom");
    if (zoom && zoom.open) return;
    const index = currentIndex();
    const pattern = similarity ? /^[0-5]$/ : /^[1-4]$/;
    if (pattern.test(event.key)) {
      const radios = items[index].querySelectorAll("input[type=radio]");
      const radio = radios[similarity ? parseInt(event.key, 10) : parseInt(event.key, 10) - 1];
      if (!radio) return;
      event.preventDefault();
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
      if (index < items.length - 1) show(index + 1);
      else document.getElementById("submit-test").focus();
    } else if (event.key === "j") {
      event.preventDefault();
      show(index + 1);
    } else if (event.key === "k") {
      event.preventDefault();
      show(index - 1);
    }
  });
})();
