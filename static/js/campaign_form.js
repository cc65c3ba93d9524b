// New campaign form: show only the ranking runs of the chosen dataset (and untick the others).
(function () {
  var select = document.getElementById("id_dataset");
  if (!select) return;
  function sync() {
    var chosen = select.value;
    document.querySelectorAll(".run-choices input[data-dataset]").forEach(function (box) {
      var match = !chosen || box.getAttribute("data-dataset") === chosen;
      box.closest("label").style.display = match ? "" : "none";
      if (!match) box.checked = false;
    });
  }
  select.addEventListener("change", sync);
  sync();
})();
