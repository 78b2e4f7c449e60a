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
  // "Insert a volume path": put the picked file's path, quoted as JSON, at
  // the input's cursor (views: tryVolumePicker).
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button[data-try-insert-path]");
    if (!button) return;
    var form = button.closest("form");
    var input = form.querySelector("#try-input");
    var select = form.querySelector("#try-volume-path");
    if (!input || !select || !select.value) return;
    var text = JSON.stringify(select.value);
    var start = input.selectionStart, end = input.selectionEnd;
    input.value = input.value.slice(0, start) + text + input.value.slice(end);
    input.focus();
    input.selectionStart = input.selectionEnd = start + text.length;
    input.dispatchEvent(new Event("input", { bubbles: true }));
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
