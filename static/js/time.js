// Shows each <time data-local-time> in the viewer's locale and time zone.
// The server writes UTC text, which stays as the element's title; a page
// without this script still reads right. Kept out of the pages so the
// Content-Security-Policy can forbid inline scripts.
(function () {
  "use strict";
  var fmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  function upgrade(root) {
    if (!root || !root.querySelectorAll) return;
    root.querySelectorAll("time[data-local-time]").forEach(function (el) {
      if (el.dataset.localized) return;
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) return;
      el.title = el.textContent;
      el.textContent = fmt.format(d);
      el.dataset.localized = "true";
    });
  }
  document.addEventListener("DOMContentLoaded", function () { upgrade(document); });
  // Fragments htmx swaps in (live lists, Try a tool) carry times too.
  document.addEventListener("htmx:load", function (e) { upgrade(e.target); });
})();
