// Log-in and sign-up that ride out a busy minute. A form marked data-retry-busy is sent by fetch instead of
// by the browser: when the server answers 503 (busy, or briefly away) the person stays on the page with
// everything they typed, is told why, and the form is sent again by itself after Retry-After. Any other
// answer is shown as the browser would have shown it: a redirect is followed, a page (a form with its
// errors) replaces this one. Without JavaScript the form posts as usual.
(function () {
  "use strict";

  const MAX_TRIES = 20;  // about a minute and more at the server's Retry-After

  function retryAfterMs(response) {
    const seconds = parseInt(response.headers.get("Retry-After") || "", 10);
    const base = isNaN(seconds) ? 5000 : seconds * 1000;
    return Math.round(base * (1 + 0.3 * Math.random()));  // spread, so refused browsers do not return together
  }

  function statusNode(form) {
    let node = form.querySelector(".retry-state");
    if (!node) {
      node = document.createElement("p");
      node.className = "retry-state";
      node.setAttribute("role", "status");
      node.setAttribute("aria-live", "polite");
      form.querySelector("button[type=submit]").parentNode.after(node);
    }
    return node;
  }

  function showPage(html) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    document.title = doc.title;
    document.body.replaceWith(document.adoptNode(doc.body));
    attachAll();
  }

  function attach(form) {
    if (form.dataset.retryAttached) return;
    form.dataset.retryAttached = "1";
    const button = form.querySelector("button[type=submit]");
    const label = button.textContent;
    let tries = 0;
    let timer = null;

    function done(text) {
      button.disabled = false;
      button.textContent = label;
      statusNode(form).textContent = text || "";
    }

    function later(ms, why) {
      tries += 1;
      if (tries > MAX_TRIES) {
        done(why + " Please send the form again in a little while; what you typed is still here.");
        return;
      }
      let left = Math.max(1, Math.round(ms / 1000));
      const say = function () {
        statusNode(form).textContent = why + " Trying again in " + left + " s; what you typed stays here.";
      };
      say();
      const tick = setInterval(function () { left -= 1; if (left > 0) say(); }, 1000);
      timer = setTimeout(function () { clearInterval(tick); send(); }, ms);
    }

    function send() {
      button.disabled = true;
      button.textContent = "Sending\u2026";
      fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin", redirect: "follow" })
        .then(function (response) {
          if (response.status === 503) {
            return response.text().then(function () {
              later(retryAfterMs(response), "Vericap is busy right now.");
            });
          }
          if (response.redirected) {
            window.location.assign(response.url);
            return null;
          }
          return response.text().then(function (html) {
            if ((response.headers.get("Content-Type") || "").indexOf("text/html") === 0) {
              showPage(html);
            } else {
              done("The server answered " + response.status + ".");
            }
          });
        })
        .catch(function () {
          done("Could not reach Vericap. Check your connection and send the form again; what you typed is still here.");
        });
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      clearTimeout(timer);
      tries = 0;
      send();
    });
  }

  function attachAll() {
    document.querySelectorAll("form[data-retry-busy]").forEach(attach);
  }
  attachAll();
})();
