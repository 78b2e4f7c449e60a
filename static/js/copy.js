// Copy buttons: a button with data-copy="ID" copies the text of the element
// with that id (a token shown once, an MCP endpoint, an invitation link, a
// curl line) and says "Copied" where eyes and screen readers notice. Kept out
// of the pages so the Content-Security-Policy can forbid inline scripts; the
// buttons are hidden until this script shows them, so no page offers a button
// that cannot work.
(function () {
  "use strict";
  function show() {
    document.querySelectorAll("button[data-copy][hidden]").forEach(function (b) {
      b.hidden = false;
    });
  }
  // The fallback for a browser without the asynchronous clipboard (a page
  // served over plain HTTP to another host is not a secure context).
  function copyBySelection(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    area.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  function say(button, message) {
    var status = button.parentNode.querySelector(".copy-status");
    button.textContent = message === "Copied" ? "Copied" : "Copy";
    if (status) status.textContent = message;
    clearTimeout(button._copyTimer);
    button._copyTimer = setTimeout(function () {
      button.textContent = "Copy";
      if (status) status.textContent = "";
    }, 2500);
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent.trim();
    var done = navigator.clipboard && window.isSecureContext
      ? navigator.clipboard.writeText(text).catch(function () { return copyBySelection(text); })
      : copyBySelection(text);
    done.then(function () { say(button, "Copied"); },
      function () { say(button, "Could not copy: select the text and copy it by hand"); });
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", show);
  else show();
  document.addEventListener("htmx:afterSettle", show);
})();
