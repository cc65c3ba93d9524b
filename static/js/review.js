// Review queue: "select all" for the bulk decision, and a confirmation before a bulk rejection.
(function () {
  var all = document.getElementById("select-all");
  var form = document.getElementById("bulk-form");
  if (!form) return;
  var boxes = form.querySelectorAll('input[name="assignment"]');
  if (all) all.addEventListener("change", function () {
    boxes.forEach(function (box) { box.checked = all.checked; });
  });
  form.addEventListener("submit", function (event) {
    var picked = form.querySelectorAll('input[name="assignment"]:checked').length;
    var decision = event.submitter ? event.submitter.value : "";
    if (!picked) { event.preventDefault(); alert("Select at least one assignment."); return; }
    if (decision === "reject" && !confirm("Reject " + picked + " assignment(s)? Their HITs go to other workers.")) {
      event.preventDefault();
    }
  });
})();
