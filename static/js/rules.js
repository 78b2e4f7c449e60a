// Tool rules in a grant form: Add rule appends a row copied from the form's
// <template>, Remove takes a row out. Rows are numbered again after each
// change so every field keeps a label that says which rule it is. Kept out
// of the pages so the Content-Security-Policy can forbid inline scripts;
// without this script the buttons stay hidden and the form offers blank rows.
(function () {
  "use strict";
  function renumber(body) {
    body.querySelectorAll("[data-rule-row]").forEach(function (row, i) {
      var tool = row.querySelector("[name=rule_tool]");
      var policy = row.querySelector("[name=rule_policy]");
      var remove = row.querySelector("[data-rule-remove]");
      var when = row.querySelector("[name=rule_when]");
      if (when) {
        when.setAttribute("aria-label", "Argument rules of rule " + (i + 1));
        when.setAttribute("data-testid", "rule-when-" + i);
      }
      tool.setAttribute("aria-label", "Tool of rule " + (i + 1));
      tool.setAttribute("data-testid", "rule-tool-" + i);
      policy.setAttribute("aria-label", "Policy of rule " + (i + 1));
      policy.setAttribute("data-testid", "rule-policy-" + i);
      remove.setAttribute("aria-label", "Remove rule " + (i + 1));
      remove.setAttribute("data-testid", "rule-remove-" + i);
      remove.hidden = false;
    });
  }
  function setup() {
    document.querySelectorAll("[data-rules]").forEach(function (body) {
      var form = body.closest("form");
      var add = form && form.querySelector("[data-rule-add]");
      if (add) add.hidden = false;
      renumber(body);
    });
  }
  document.addEventListener("click", function (e) {
    var add = e.target.closest && e.target.closest("[data-rule-add]");
    if (add) {
      var form = add.closest("form");
      var body = form.querySelector("[data-rules]");
      var tpl = form.querySelector("#rule-row-template");
      body.appendChild(tpl.content.cloneNode(true));
      renumber(body);
      var rows = body.querySelectorAll("[data-rule-row]");
      rows[rows.length - 1].querySelector("[name=rule_tool]").focus();
      return;
    }
    var remove = e.target.closest && e.target.closest("[data-rule-remove]");
    if (remove) {
      var row = remove.closest("[data-rule-row]");
      var rulesBody = row.parentNode;
      var next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      renumber(rulesBody);
      // The focus goes to the neighbouring rule, or to Add rule when none is left.
      var target = next ? next.querySelector("[name=rule_tool]") : rulesBody.closest("form").querySelector("[data-rule-add]");
      if (target) target.focus();
    }
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
  document.addEventListener("htmx:afterSettle", setup);
})();
