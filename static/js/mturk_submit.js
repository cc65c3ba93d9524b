// After our submit: post the assignment id to MTurk's externalSubmit at once (the button stays for a
// browser without JavaScript).
(function () {
  "use strict";
  var form = document.getElementById("mturk-submit");
  if (form) { form.submit(); }
})();
