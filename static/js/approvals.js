// Approvals page behaviour: keyboard shortcuts for the focused item, keeping
// what an approver typed across live updates, and the pending count in the
// title and the Pending tab. Loaded as a file so the CSP can forbid inline scripts.
(function () {
  "use strict";
  var ITEM = "[data-testid=approval-item]";

  function items() { return Array.prototype.slice.call(document.querySelectorAll(ITEM)); }
  function current() {
    var el = document.activeElement;
    return el && el.closest ? el.closest(ITEM) : null;
  }
  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }

  function move(step) {
    var all = items();
    if (all.length === 0) return;
    var i = all.indexOf(current());
    var next = i < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(Math.max(i + step, 0), all.length - 1);
    all[next].focus();
    all[next].scrollIntoView({ block: "nearest" });
  }

  // j / k move, a approve, s approve for the session, d deny: focus the reason,
  // Enter there submits the denial. Keys typed into a field are left alone.
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    var item = current();
    switch (e.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "a": case "s":
        if (!item) return;
        var btn = item.querySelector("[data-key=" + e.key + "]");
        if (btn) btn.click();
        break;
      case "d":
        if (!item) return;
        var reason = item.querySelector("[data-reason]");
        if (reason) reason.focus();
        break;
      default: return;
    }
    e.preventDefault();
  });

  // Filters apply as soon as one changes.
  document.addEventListener("change", function (e) {
    if (e.target.hasAttribute && e.target.hasAttribute("data-autosubmit") && e.target.form) e.target.form.submit();
  });

  // A live update replaces the whole queue on reconnecting, else one item at
  // a time; what the approver was doing in it (focus, a half-typed reason, an
  // opened input) is carried over by item.
  var saved = null;
  document.addEventListener("htmx:sseBeforeMessage", function () {
    saved = { focus: null, inReason: false, caret: 0, reasons: {}, open: {} };
    var item = current();
    if (item) {
      saved.focus = item.getAttribute("data-approval");
      saved.inReason = document.activeElement.hasAttribute("data-reason");
      saved.caret = saved.inReason ? document.activeElement.selectionStart : 0;
    }
    items().forEach(function (it) {
      var id = it.getAttribute("data-approval");
      var r = it.querySelector("[data-reason]");
      if (r && r.value) saved.reasons[id] = r.value;
      if (it.querySelector("details[open]")) saved.open[id] = true;
    });
  });
  document.addEventListener("htmx:sseMessage", function () {
    if (saved) {
      items().forEach(function (it) {
        var id = it.getAttribute("data-approval");
        var r = it.querySelector("[data-reason]");
        if (r && saved.reasons[id]) r.value = saved.reasons[id];
        var d = it.querySelector("details");
        if (d && saved.open[id]) d.open = true;
        if (id === saved.focus) {
          if (saved.inReason && r) { r.focus(); r.setSelectionRange(saved.caret, saved.caret); } else { it.focus(); }
        }
      });
      saved = null;
    }
    showPending();
    tick();
  });

  // The queue says when its live stream is open (tests wait for it).
  document.addEventListener("htmx:sseOpen", function (e) {
    if (e.target.matches && e.target.matches("[data-testid=approval-live]")) e.target.setAttribute("data-live", "open");
  });

  function showPending() {
    // Live updates send the count alone (approval-pending), not the whole queue.
    var q = document.getElementById("approval-pending") || document.getElementById("approval-queue");
    if (!q) return;
    var n = parseInt(q.getAttribute("data-pending"), 10) || 0;
    document.title = (n > 0 ? "(" + n + ") " : "") + "Approvals · Subako";
    var tab = document.querySelector("[data-testid=tab-pending]");
    if (tab) tab.textContent = String(n);
    // The navigation's badge has its own stream, on every page (layout's navPending).
  }

  // "waiting 3m 20s" keeps counting without a round trip.
  function fmt(secs) {
    if (secs < 60) return secs + "s";
    if (secs < 3600) return Math.floor(secs / 60) + "m " + (secs % 60) + "s";
    if (secs < 86400) return Math.floor(secs / 3600) + "h " + Math.floor(secs % 3600 / 60) + "m";
    return Math.floor(secs / 86400) + "d " + Math.floor(secs % 86400 / 3600) + "h";
  }
  function tick() {
    var now = Math.floor(Date.now() / 1000);
    document.querySelectorAll("[data-since]").forEach(function (el) {
      var since = parseInt(el.getAttribute("data-since"), 10);
      if (since > 0) el.textContent = fmt(Math.max(now - since, 0));
    });
  }
  window.setInterval(tick, 5000);
})();
