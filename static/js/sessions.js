// Session page behaviour. Kept out of the page so the Content-Security-Policy
// can forbid inline scripts.
(function () {
  "use strict";
  // "Try a tool": show the input schema of the tool picked. Delegated from the
  // document, because htmx replaces the form with each answer.
  document.addEventListener("change", function (e) {
    var select = e.target;
    if (!select.matches || !select.matches("select[data-try-tool]")) return;
    var form = select.closest("form");
    form.querySelectorAll("[data-schema-for]").forEach(function (el) {
      el.hidden = el.getAttribute("data-schema-for") !== select.value;
      // The schema is fetched the first time its tool is picked (views: lazySchema).
      var schema = el.querySelector(".session-schema");
      if (!el.hidden && schema) schema.dispatchEvent(new Event("schema-wanted"));
    });
  });
  // The page says whether its live stream is open, so a person knows the
  // call log is current (and tests know when to start).
  function live(state, text) {
    return function (e) {
      e.target.setAttribute("data-live", state);
      var label = e.target.querySelector("[data-live-label]");
      if (label) label.textContent = text;
    };
  }
  document.addEventListener("htmx:sseOpen", live("open", "live"));
  document.addEventListener("htmx:sseError", live("error", "reconnecting…"));
})();
