// Subako console behaviour. Kept out of the pages so the Content-Security-Policy
// can forbid inline scripts.
(function () {
  "use strict";
  // Forms marked data-confirm ask before they submit (deleting, removing
  // people) in a dialog inside the page, not the browser's window.confirm: it
  // names the thing, its confirm button says what happens, the focus moves
  // into it (on Cancel, the choice that changes nothing), Escape or Cancel
  // leave everything as it was, and only confirming lets the form go. A native
  // <dialog> opened as modal keeps the focus inside and is announced as one.
  var dialog = null, onConfirm = null, confirmed = null;
  function confirmDialog() {
    if (dialog) return dialog;
    dialog = document.createElement("dialog");
    dialog.className = "confirm-dialog";
    dialog.setAttribute("aria-labelledby", "confirm-text");
    dialog.setAttribute("data-testid", "confirm-dialog");
    var form = document.createElement("form");
    form.method = "dialog";
    var p = document.createElement("p");
    p.id = "confirm-text";
    p.setAttribute("data-testid", "confirm-text");
    var actions = document.createElement("div");
    actions.className = "confirm-actions";
    var cancel = document.createElement("button");
    cancel.className = "btn";
    cancel.value = "cancel";
    cancel.textContent = "Cancel";
    cancel.setAttribute("data-testid", "confirm-cancel");
    var ok = document.createElement("button");
    ok.className = "btn btn-danger";
    ok.value = "ok";
    ok.setAttribute("data-testid", "confirm-ok");
    actions.append(cancel, ok);
    form.append(p, actions);
    dialog.append(form);
    // Only the confirm button acts, at its click. Escape and Cancel just
    // close. (Acting on the "close" event instead lost a confirmation: that
    // event comes as a task of its own, and one from a dialog cancelled by
    // Escape could arrive after the next ask, under a busy page, and drop it.)
    ok.addEventListener("click", function (e) {
      e.preventDefault();
      var go = onConfirm;
      onConfirm = null;
      dialog.close("ok");
      if (go) go();
    });
    document.body.append(dialog);
    return dialog;
  }
  function ask(msg, label, go) {
    var d = confirmDialog();
    d.querySelector("[data-testid=confirm-text]").textContent = msg;
    d.querySelector("[data-testid=confirm-ok]").textContent = label || "Confirm";
    d.returnValue = "";
    onConfirm = go;
    d.showModal();
    d.querySelector("[data-testid=confirm-cancel]").focus();
  }
  document.addEventListener("submit", function (e) {
    var form = e.target, msg = form.getAttribute("data-confirm");
    if (!msg) return;
    if (confirmed === form) { confirmed = null; return; } // the submit the dialog let go
    e.preventDefault();
    e.stopImmediatePropagation();
    var by = e.submitter && e.submitter.form === form ? e.submitter : null;
    ask(msg, by ? by.textContent.trim() : "", function () {
      confirmed = form;
      // requestSubmit keeps the button's name and value, and runs validation and htmx.
      if (form.requestSubmit) form.requestSubmit(by || undefined); else form.submit();
    });
  }, true);
  document.addEventListener("htmx:confirm", function (e) {
    var elt = e.detail.elt, msg = elt.getAttribute("data-confirm");
    // A form was asked on its submit already.
    if (!msg || elt.tagName === "FORM") return;
    e.preventDefault();
    ask(msg, elt.textContent.trim(), function () { e.detail.issueRequest(true); });
  });
  // Each live part (htmx's SSE extension) holds a connection open, and a
  // browser opens at most six to one host over HTTP/1.1. A page kept for Back
  // (the back/forward cache) would keep its streams open and, a few pages on,
  // leave the page in front waiting for a connection: close them as the page
  // is hidden, and reload a page brought back from that cache (what it showed
  // is stale anyway, and its streams are closed).
  window.addEventListener("pagehide", function () {
    if (!window.htmx) return;
    document.querySelectorAll("[sse-connect]").forEach(function (el) { htmx.trigger(el, "htmx:beforeCleanupElement"); });
  });
  window.addEventListener("pageshow", function (e) {
    if (e.persisted && document.querySelector("[sse-connect]")) window.location.reload();
  });
  // htmx swaps error responses too: the server renders them as fragments meant to be seen.
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.xhr.status >= 400 && e.detail.xhr.getResponseHeader("HX-Retarget")) {
      e.detail.shouldSwap = true; e.detail.isError = false;
    }
  });
})();
