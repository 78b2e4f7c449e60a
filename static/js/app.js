// Subako console behaviour. Kept out of the pages so the Content-Security-Policy
// can forbid inline scripts.
(function () {
  "use strict";
  // Forms marked data-confirm ask before they submit (deleting, removing people).
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { e.preventDefault(); e.stopImmediatePropagation(); }
  }, true);
  document.addEventListener("htmx:confirm", function (e) {
    var msg = e.detail.elt.getAttribute("data-confirm");
    if (!msg) return;
    e.preventDefault();
    if (window.confirm(msg)) e.detail.issueRequest(true);
  });
  // htmx swaps error responses too: the server renders them as fragments meant to be seen.
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.xhr.status >= 400 && e.detail.xhr.getResponseHeader("HX-Retarget")) {
      e.detail.shouldSwap = true; e.detail.isError = false;
    }
  });
})();
