// The navigation behind the Menu button on narrow windows. Kept out of the
// pages so the Content-Security-Policy can forbid inline scripts. Without
// this script the menu button stays hidden and the navigation stays open.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest(".nav-toggle");
    if (!button) return;
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    button.closest(".sidebar").classList.toggle("nav-open", open);
  });
  // Escape closes the open menu and gives the focus back to its button.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    var button = document.querySelector(".nav-toggle[aria-expanded=true]");
    if (!button) return;
    button.setAttribute("aria-expanded", "false");
    button.closest(".sidebar").classList.remove("nav-open");
    button.focus();
  });
})();
