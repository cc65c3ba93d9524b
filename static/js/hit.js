// The HIT page: keyboard answering, follow-ups, autosave, progress, time per item, submit.
// No build step, no library. The server re-checks everything this file checks. Which answers need
// follow-ups and what is missing are the server's rules (annotator/crowd/scales.py, hit_rules), read from the
// "hit-rules" JSON on the page: this file applies them and has none of its own.
(function () {
  "use strict";

  // ---- enlarge on click, preload (also in preview mode) ----
  const zoom = document.getElementById("zoom");
  const zoomImg = document.getElementById("zoom-img");
  document.querySelectorAll("a[data-zoom]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      if (!zoom || typeof zoom.showModal !== "function") return; // the link still opens the image
      event.preventDefault();
      zoomImg.src = link.href;
      zoomImg.alt = link.getAttribute("aria-label").replace("Enlarge the", "Enlarged");
      zoom.showModal();
    });
  });
  if (zoom) zoom.addEventListener("click", function (event) { if (event.target === zoom) zoom.close(); });
  window.addEventListener("load", function () {
    document.querySelectorAll("a[data-zoom]").forEach(function (link) { new Image().src = link.href; });
  });

  const dataNode = document.getElementById("page-data");
  const form = document.getElementById("hit-form");
  if (!dataNode || !form) return; // preview or read-only
  const data = JSON.parse(dataNode.textContent);
  if (!data.editable) return;
  const rules = JSON.parse(document.getElementById("hit-rules").textContent);

  const similarity = rules.scale === "similarity";
  const items = Array.prototype.slice.call(form.querySelectorAll(".item"));
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const submitButton = document.getElementById("submit-hit");
  const missingNode = document.getElementById("missing");
  const saveNode = document.getElementById("save-state");
  const doneNode = document.getElementById("done-count");
  const bar = document.getElementById("progress-bar");
  const firstAnchors = form.querySelector(".anchors");
  const WORDS = firstAnchors ? Array.prototype.map.call(firstAnchors.querySelectorAll("li"), function (li) { return li.textContent; }) : [];
  let current = 0;

  // ---- instructions: folded once read ----
  const instructions = document.getElementById("instructions");
  const readKey = "vericap-instructions-read-" + data.campaignId;
  function markRead() { try { localStorage.setItem(readKey, "1"); } catch (e) { /* private mode */ } }
  function wasRead() { try { return !!localStorage.getItem(readKey); } catch (e) { return false; } }
  if (wasRead()) instructions.open = false;
  instructions.addEventListener("toggle", function () { if (!instructions.open) markRead(); });

  // ---- state of one item, as the server wants it ----
  function token(item) { return item.dataset.token; }
  function checkedValues(item, name) {
    return Array.prototype.map.call(item.querySelectorAll("input[name='" + name + "-" + token(item) + "']:checked"), function (i) { return i.value; });
  }
  function state(item) {
    const t = token(item);
    const result = { item_token: t, comment: item.querySelector("textarea").value, seconds_spent: seconds(item) };
    if (similarity) {
      const range = item.querySelector("input[type=range]");
      result.score = range.dataset.touched === "1" ? parseFloat(range.value) : null;
    } else {
      const picked = item.querySelector("input[type=radio]:checked");
      result.choice = picked ? picked.value : "";
      result.shortcomings = checkedValues(item, "shortcomings");
      result.wrong_aspects = checkedValues(item, "aspects");
    }
    return result;
  }
  // annotator/crowd/scales.py answer_followups: [asks why, asks what is wrong].
  function followups(choice, shortcomings) {
    const reasons = rules.needsReasons.indexOf(choice) >= 0;
    return [reasons, reasons && shortcomings.indexOf(rules.wrongWay) >= 0];
  }
  // annotator/crowd/scales.py answer_missing_part.
  function missing(item) {
    const s = state(item);
    if (similarity) return s.score === null ? rules.missing.score : null;
    if (!s.choice) return rules.missing.answer;
    const needs = followups(s.choice, s.shortcomings);
    if (needs[0] && !s.shortcomings.length) return rules.missing.reason;
    if (needs[1] && !s.wrong_aspects.length) return rules.missing.aspects;
    return null;
  }

  // ---- follow-ups appear only when they apply ----
  // The server renders only the follow-ups an item already needs; the others come from <template>s.
  function followupFieldset(item, kind, create) {
    let node = item.querySelector("." + kind);
    if (node || !create) return node;
    const template = document.getElementById(kind + "-template");
    const holder = document.createElement("div");
    holder.innerHTML = template.innerHTML.split("__TOKEN__").join(token(item));
    node = holder.querySelector("fieldset");
    const anchor = kind === "reasons" ? item.querySelector(".choices") : followupFieldset(item, "reasons", true);
    anchor.after(node);
    return node;
  }
  function updateFollowups(item) {
    if (similarity || !rules.followups) return;
    const s = state(item);
    const needs = followups(s.choice, s.shortcomings);
    const needsReasons = needs[0];
    const needsAspects = needs[1];
    const reasons = followupFieldset(item, "reasons", needsReasons);
    if (reasons) reasons.hidden = !needsReasons;
    const aspects = followupFieldset(item, "aspects", needsAspects);
    if (aspects) aspects.hidden = !needsAspects;
  }

  // ---- progress and the submit button ----
  function refresh() {
    let done = 0;
    const gaps = [];
    items.forEach(function (item) {
      const m = missing(item);
      item.classList.toggle("complete", !m);
      item.querySelector(".state").textContent = m ? "" : "\u2713";
      if (m) gaps.push("item " + item.dataset.number + ": " + m); else done += 1;
    });
    doneNode.textContent = String(done);
    bar.style.width = (100 * done / items.length) + "%";
    submitButton.disabled = done < items.length;
    missingNode.classList.toggle("complete", !gaps.length);  // green, not the red of a gap
    missingNode.textContent = gaps.length ? "Still missing - " + gaps.slice(0, 4).join("; ") + (gaps.length > 4 ? " and " + (gaps.length - 4) + " more" : "") + "." : "Everything is answered: you can submit.";
  }

  // ---- time spent per item (while it is the current item and the page is visible) ----
  const spent = {};
  let since = performance.now();
  items.forEach(function (item) {
    spent[token(item)] = parseFloat(item.querySelector("input[name^=seconds-]").value) || 0;
  });
  function flushTime() {
    const now = performance.now();
    if (!document.hidden && items[current]) spent[token(items[current])] += (now - since) / 1000;
    since = now;
  }
  function seconds(item) {
    if (item === items[current]) flushTime();
    const value = Math.round(spent[token(item)] * 10) / 10;
    item.querySelector("input[name^=seconds-]").value = String(value);
    return value;
  }
  document.addEventListener("visibilitychange", function () { flushTime(); });

  // ---- autosave in batches: what is not yet acknowledged goes in one request ----
  // An answer is kept in `unsaved` (and in localStorage) from the change until the server acknowledges it.
  // It is sent once `autosave.items` items wait or `autosave.waitMs` after the last change, when the page is
  // hidden (fetch with keepalive) or closed (navigator.sendBeacon: it cannot carry the X-CSRFToken header,
  // so the token goes in the form body, where Django's CSRF check reads it), and with the submit. The
  // server writes a batch in one statement and is idempotent per item: sending one twice is harmless.
  const BATCH = data.autosave || { items: 6, waitMs: 10000 };
  const storeKey = "vericap-unsaved-" + data.assignmentId;
  const unsaved = {};  // token -> the item's latest state not yet acknowledged
  const version = {};  // token -> changes made, so an acknowledgement of an older state keeps the newer one
  let inFlight = false;
  let submitting = false;
  let timer = null;
  let failures = 0;
  function setSaveState(text) { saveNode.textContent = text; }
  function busy() { return inFlight || Object.keys(unsaved).length > 0; }
  function keep() {
    try {
      if (Object.keys(unsaved).length) localStorage.setItem(storeKey, JSON.stringify({ at: Date.now(), answers: unsaved }));
      else localStorage.removeItem(storeKey);
    } catch (e) { /* private mode or full: the page still holds them */ }
  }
  function save(item) {
    if (submitting) return;
    const t = token(item);
    unsaved[t] = state(item);
    version[t] = (version[t] || 0) + 1;
    keep();
    setSaveState("Saving\u2026");
    clearTimeout(timer);
    if (Object.keys(unsaved).length >= BATCH.items) flush();
    else timer = setTimeout(flush, BATCH.waitMs);
  }
  function batchBody() {
    return Object.keys(unsaved).map(function (t) { return unsaved[t]; });
  }
  function flush(keepalive) {
    clearTimeout(timer);
    if (inFlight || submitting || !Object.keys(unsaved).length) return;
    const sent = {};
    Object.keys(unsaved).forEach(function (t) { sent[t] = version[t]; });
    inFlight = true;
    setSaveState("Saving\u2026");
    fetch(data.answersUrl, {
      method: "POST",
      credentials: "same-origin",
      keepalive: !!keepalive,
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ answers: batchBody() }),
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        inFlight = false;
        if (submitting) return;
        if (response.ok) {
          failures = 0;
          Object.keys(sent).forEach(function (t) { if (version[t] === sent[t]) delete unsaved[t]; });
          keep();
          if (!busy()) setSaveState("All answers saved.");
          else if (Object.keys(unsaved).length >= BATCH.items) flush();
          else timer = setTimeout(flush, BATCH.waitMs);
        } else if (response.status >= 500) {
          retry(retryAfter(response), response.status === 503 ? (body.busy ? "busy" : "away") : "error");
        } else {
          setSaveState("Not saved: " + (body.error || "the server refused these answers") + ".");
        }
      });
    }).catch(function () { inFlight = false; if (!submitting) retry(null, "offline"); });
  }
  // The page is going away: hand what is unsent to the browser, which delivers a beacon after the page is
  // gone. It stays in localStorage too, until a page of this HIT sees it acknowledged.
  function beacon() {
    if (submitting || !Object.keys(unsaved).length || !navigator.sendBeacon) return;
    const form = new URLSearchParams();
    form.set("csrfmiddlewaretoken", csrf);
    form.set("answers", JSON.stringify(batchBody()));
    navigator.sendBeacon(data.answersUrl, form);
  }
  window.addEventListener("pagehide", beacon);
  document.addEventListener("visibilitychange", function () { if (document.hidden) flush(true); });
  // A 503 names its wait (Retry-After): the server is briefly unavailable, and an autosave is safe to repeat.
  function retryAfter(response) {
    const seconds = parseInt(response.headers.get("Retry-After") || "", 10);
    return isNaN(seconds) ? null : seconds * 1000;
  }
  // Retry-After when the server names it, else a doubling backoff; both spread a little, so that browsers
  // refused together do not all come back in the same second.
  function backoff(wait, tries) {
    const base = wait || Math.min(30000, 1000 * Math.pow(2, tries));
    return Math.round(base * (1 + 0.3 * Math.random()));
  }
  const WHY = {
    busy: "the server is busy",
    away: "the server is briefly unavailable",
    error: "the server had a problem",
    offline: "no connection",
  };
  function retry(wait, why) {
    failures += 1;
    const ms = backoff(wait, failures);
    setSaveState("Not saved yet (" + (WHY[why] || WHY.offline) + ") - trying again in " + Math.max(1, Math.round(ms / 1000)) +
      " s. Your answers stay on this page.");
    clearTimeout(timer);
    timer = setTimeout(flush, ms);
  }
  window.addEventListener("online", function () { if (failures) flush(); });
  window.addEventListener("beforeunload", function (event) {
    // Unsent answers go by beacon on the way out; only a known-dead connection is worth a question.
    if (failures > 0 && busy()) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
  // What a closed tab or a dropped connection left unacknowledged comes back from localStorage: shown in
  // the form, and sent again at once (the lease is the server's check: an old HIT's answers are refused).
  function restore(item, s) {
    if (similarity) {
      const range = item.querySelector("input[type=range]");
      if (s.score !== null && s.score !== undefined) { range.value = String(s.score); range.dataset.touched = "1"; describeSlider(range); }
    } else {
      item.querySelectorAll("input[type=radio]").forEach(function (r) { r.checked = r.value === s.choice; });
      updateFollowups(item);
      item.querySelectorAll("input[name^='shortcomings-']").forEach(function (c) { c.checked = (s.shortcomings || []).indexOf(c.value) >= 0; });
      updateFollowups(item);
      item.querySelectorAll("input[name^='aspects-']").forEach(function (c) { c.checked = (s.wrong_aspects || []).indexOf(c.value) >= 0; });
    }
    item.querySelector("textarea").value = s.comment || "";
    const t = token(item);
    spent[t] = Math.max(spent[t] || 0, s.seconds_spent || 0);
  }
  function restoreUnsaved() {
    let kept = null;
    try { kept = JSON.parse(localStorage.getItem(storeKey) || "null"); } catch (e) { kept = null; }
    if (!kept || !kept.answers) return 0;
    let count = 0;
    items.forEach(function (item) {
      const s = kept.answers[token(item)];
      if (!s) return;
      restore(item, s);
      unsaved[token(item)] = s;
      version[token(item)] = 1;
      count += 1;
    });
    return count;
  }

  // ---- moving between items ----
  function setCurrent(index) {
    if (index === current) return;
    flushTime();
    items[current].classList.remove("current");
    current = index;
    items[current].classList.add("current");
  }
  function focusTarget(item) {
    return item.querySelector("input[type=radio]:checked") || item.querySelector("input[type=radio]") ||
      item.querySelector("input[type=range]") || item;
  }
  function move(delta) {
    const index = Math.max(0, Math.min(items.length - 1, current + delta));
    setCurrent(index);
    const target = focusTarget(items[index]);
    target.focus({ preventScroll: true });
    items[index].scrollIntoView({ block: "center", behavior: "auto" });
  }
  form.addEventListener("focusin", function (event) {
    const item = event.target.closest(".item");
    if (item) setCurrent(items.indexOf(item));
  });

  // ---- answering ----
  function answered(item) {
    updateFollowups(item);
    refresh();
    save(item);
    if (instructions.open && !wasRead()) { instructions.open = false; markRead(); }
  }
  form.addEventListener("change", function (event) {
    const item = event.target.closest(".item");
    if (item) answered(item);
  });
  form.addEventListener("input", function (event) {
    const item = event.target.closest(".item");
    if (!item) return;
    if (event.target.type === "range") {
      event.target.dataset.touched = "1";
      describeSlider(event.target);
      refresh();
    } else if (event.target.tagName === "TEXTAREA") {
      clearTimeout(item._commentTimer);
      item._commentTimer = setTimeout(function () { save(item); }, 600);
    }
  });
  function describeSlider(range) {
    if (!WORDS.length) return;
    const word = WORDS[Math.round(parseFloat(range.value))];
    range.setAttribute("aria-valuetext", range.dataset.touched === "1" ? word : "not rated yet");
    const stateNode = range.closest(".item").querySelector(".slider-state");
    if (stateNode) stateNode.textContent = range.dataset.touched === "1" ? "Rated: " + word : "Not rated yet: move the slider";
  }
  items.forEach(function (item) {
    const range = item.querySelector("input[type=range]");
    if (range) describeSlider(range);
  });

  function choose(item, key) {
    const radios = item.querySelectorAll("input[type=radio]");
    const radio = radios[key - 1];
    if (!radio) return;
    radio.checked = true;
    answered(item);
    if (followups(radio.value, [])[0]) {
      item.querySelector(".reasons input[type=checkbox]").focus();
    } else {
      radio.focus();
    }
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target;
    if (zoom && zoom.open) return;
    if (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text")) {
      if (event.key === "Escape") target.blur();
      return;
    }
    const item = items[current];
    if (!similarity && /^[1-4]$/.test(event.key)) {
      event.preventDefault();
      choose(item, parseInt(event.key, 10));
    } else if (similarity && /^[0-5]$/.test(event.key)) {
      event.preventDefault();
      const range = item.querySelector("input[type=range]");
      range.value = event.key;
      range.dataset.touched = "1";
      describeSlider(range);
      range.focus();
      answered(item);
    } else if (event.key === "j" || event.key === "ArrowDown") {
      event.preventDefault();
      move(1);
    } else if (event.key === "k" || event.key === "ArrowUp") {
      event.preventDefault();
      move(-1);
    } else if (event.key === "Enter") {
      if (target.tagName === "BUTTON" || target.tagName === "A" || target.tagName === "SUMMARY") return;
      event.preventDefault();
      if (missing(item) === null && current === items.length - 1 && !submitButton.disabled) {
        submitButton.focus();
      } else if (missing(item) === null) {
        move(1);
      } else {
        setSaveState("Item " + item.dataset.number + " still needs " + missing(item) + ".");
      }
    }
  });
  form.addEventListener("change", function (event) {
    // a range commits on change (mouse up / key release): save it then
    if (event.target.type === "range") { event.target.dataset.touched = "1"; }
  }, true);

  // ---- submit: one request; the server is idempotent, the button is disabled while it runs ----
  // A submit is idempotent on the server: after a 503 or a dropped connection it is sent again by itself.
  let submitTries = 0;
  function submitLater(wait, text) {
    submitTries += 1;
    if (submitTries > 8) {
      submitting = false;
      submitButton.disabled = false;
      submitButton.textContent = "Submit HIT";
      missingNode.classList.remove("complete");
      missingNode.textContent = text + " Your answers are saved as you go; try again in a moment.";
      return;
    }
    const ms = backoff(wait, submitTries);
    missingNode.classList.remove("complete");
    missingNode.textContent = text + " Trying again in " + Math.max(1, Math.round(ms / 1000)) + " s\u2026";
    setTimeout(sendSubmit, ms);
  }
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    refresh();
    if (submitButton.disabled) return;
    submitButton.disabled = true;
    submitButton.textContent = "Submitting\u2026";
    submitTries = 0;
    submitting = true;  // the submit carries every answer: no batch beside it
    clearTimeout(timer);
    sendSubmit();
  });
  function sendSubmit() {
    flushTime();
    fetch(data.submitUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ answers: items.map(state) }),
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (response.ok) {
          Object.keys(unsaved).forEach(function (k) { delete unsaved[k]; });
          keep();
          window.location.assign(body.next_url || "/work/");
          return;
        }
        if (response.status === 503) {
          submitButton.textContent = "Waiting to submit\u2026";
          submitLater(retryAfter(response), body.error || "The server is briefly unavailable.");
          return;
        }
        submitting = false;
        submitButton.disabled = false;
        submitButton.textContent = "Submit HIT";
        missingNode.classList.remove("complete");
        missingNode.textContent = body.error || "The server could not take the HIT; try again.";
        flush();
      });
    }).catch(function () {
      submitButton.textContent = "Waiting to submit\u2026";
      submitLater(null, "Could not reach the server.");
    });
  }

  // ---- returning a HIT is final: ask once ----
  const returnForm = document.querySelector(".return-form");
  if (returnForm) returnForm.addEventListener("submit", function (event) {
    if (!window.confirm("Return this HIT? Someone else will do it and you cannot take it again.")) event.preventDefault();
  });

  // ---- the lease: warn in the last minutes ----
  const expiresAt = Date.parse(data.expiresAt);
  function checkLease() {
    const minutes = Math.floor((expiresAt - Date.now()) / 60000);
    if (minutes < 0) {
      missingNode.classList.remove("complete");
      missingNode.textContent = "Your lease on this HIT has expired; reload the page.";
      submitButton.disabled = true;
    } else if (minutes < 5) {
      setSaveState("Your lease on this HIT ends in " + (minutes + 1) + " minute" + (minutes ? "s" : "") + ": submit soon.");
    }
  }
  setInterval(checkLease, 30000);

  // ---- start where the worker left off ----
  if (data.pageUrl && window.location.pathname !== data.pageUrl) {
    // The claim answered with this page: its address is the page's own, so a reload is a plain GET.
    history.replaceState(null, "", data.pageUrl);
  }
  const restored = restoreUnsaved();
  items.forEach(updateFollowups);
  refresh();
  let first = items.findIndex(function (item) { return missing(item) !== null; });
  if (first < 0) first = items.length - 1;
  current = first;
  items[current].classList.add("current");
  if (first > 0) items[first].scrollIntoView({ block: "center" });
  focusTarget(items[first]).focus({ preventScroll: first === 0 });
  if (restored) {
    setSaveState("Saving\u2026");
    flush();
  } else {
    setSaveState(Object.keys(data.answers || {}).length ? "Your saved answers are back." : "");
  }
})();
