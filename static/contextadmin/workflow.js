/* The workflow page (issue 16):
 * - trigger rows show only the fields of their type;
 * - every hand-off whose condition names an environment variable is flagged before saving:
 *   it never fires in production, where environment variables are suppressed;
 * - condition inputs complete this workflow's environment and derived names.
 * Rows added or removed by nested_admin are picked up by a MutationObserver.
 */
(function () {
  "use strict";

  // The rules come from the server (contextadmin/workflow_page_rules.py, rendered into the page
  // as the "workflow-rules" script): which fields each trigger type uses, what a reference is,
  // and the production warning's words (the same as the saved page's).
  var RULES = null;
  function rules() {
    if (!RULES) RULES = JSON.parse(document.getElementById("workflow-rules").textContent);
    return RULES;
  }
  function fieldsOf(type) {
    return rules().trigger_fields[type] || rules().all_trigger_fields;
  }
  // nested_admin classes each header by its label, slugified.
  var HEADER_CLASSES = {
    agent: "agent", equals: "text-equals", case_sensitive: "case-sensitive", trim: "trim",
    count: "turn-count", tool: "tool", status: "status",
  };

  function form() {
    return document.getElementById("workflow_form");
  }

  function isTemplate(element) {
    return /__prefix__|-empty/.test(element.name || element.id || "");
  }

  function rowDeleted(element) {
    var row = element.closest(".djn-tr, .djn-item, tr, .inline-related");
    if (!row) return false;
    var box = row.querySelector("input[type=checkbox][name$='-DELETE']");
    return (box && box.checked) || row.classList.contains("djn-item-deleted") ||
      row.classList.contains("deleted");
  }

  // -- trigger rows --------------------------------------------------------------------------
  function triggerRows() {
    var selects = form().querySelectorAll("select[name*='-triggers-'][name$='-type']");
    return Array.prototype.filter.call(selects, function (select) { return !isTemplate(select); });
  }

  function applyTriggerType(select) {
    var row = select.closest(".djn-tr, tr");
    if (!row) return;
    var shown = fieldsOf(select.value);
    rules().all_trigger_fields.forEach(function (field) {
      var cell = row.querySelector("td.field-" + field);
      if (!cell) return;
      var used = shown.indexOf(field) !== -1;
      cell.classList.toggle("trigger-field-unused", !used);
      cell.setAttribute("aria-hidden", used ? "false" : "true");
      cell.querySelectorAll("input, select, textarea").forEach(function (input) {
        // Not submitted while unused: a value typed before switching type cannot linger.
        input.disabled = !used;
      });
    });
  }

  function applyTriggerColumns() {
    // Hide a column (header and cells) when no trigger row of that table uses it.
    form().querySelectorAll("table").forEach(function (table) {
      var selects = table.querySelectorAll("select[name*='-triggers-'][name$='-type']");
      var live = Array.prototype.filter.call(selects, function (s) { return !isTemplate(s); });
      if (!selects.length) return;
      rules().all_trigger_fields.forEach(function (field) {
        var used = live.some(function (s) { return fieldsOf(s.value).indexOf(field) !== -1; });
        var header = "th.djn-th." + HEADER_CLASSES[field] + ", th.column-" + field;
        table.querySelectorAll(header + ", td.field-" + field).forEach(
          function (cell) { cell.classList.toggle("trigger-column-unused", !used); }
        );
      });
    });
  }

  // -- hand-offs in production ---------------------------------------------------------------
  function namesOf(category) {
    var inputs = form().querySelectorAll("input[name^='" + category + "-'][name$='-name']");
    var names = [];
    inputs.forEach(function (input) {
      if (isTemplate(input) || rowDeleted(input) || !input.value.trim()) return;
      names.push(input.value.trim());
    });
    return names;
  }

  function conditionInputs() {
    var inputs = form().querySelectorAll("input[name^='handoffs-'][name$='-condition']");
    return Array.prototype.filter.call(inputs, function (input) { return !isTemplate(input); });
  }

  function conditionNames(condition) {
    var names = [];
    var pattern = new RegExp(rules().condition_reference, "g");
    var match;
    while ((match = pattern.exec(condition)) !== null) names.push(match[1]);
    return names;
  }

  function rowValue(input, field) {
    var other = form().querySelector("[name='" + input.name.replace(/condition$/, field) + "']");
    return other ? other.value : "?";
  }

  function applyProductionWarnings() {
    var environment = namesOf("environment_variables");
    var summary = [];
    conditionInputs().forEach(function (input, index) {
      var cell = input.closest("td") || input.parentNode;
      var note = cell.querySelector(".production-warning");
      var gated = conditionNames(input.value).filter(function (name) {
        return environment.indexOf(name) !== -1;
      });
      if (!gated.length || rowDeleted(input)) {
        if (note) note.remove();
        return;
      }
      var text = rules().production_warning + " (" + gated.join(", ") + ")";
      if (!note) {
        note = document.createElement("p");
        note.className = "production-warning";
        note.setAttribute("role", "status");
        cell.appendChild(note);
      }
      if (note.textContent !== text) note.textContent = text;
      summary.push("hand-off " + rowValue(input, "source_agent") + " → " +
        rowValue(input, "target_agent") + " when " + input.value.trim() + ": " + text);
    });
    var box = document.getElementById("production-warnings");
    if (!box) return;
    var list = box.querySelector("ul");
    if (list.dataset.lines === JSON.stringify(summary)) return;
    list.dataset.lines = JSON.stringify(summary);
    list.textContent = "";
    summary.forEach(function (line) {
      var item = document.createElement("li");
      item.textContent = line;
      list.appendChild(item);
    });
    box.hidden = summary.length === 0;
  }

  // -- condition completion ------------------------------------------------------------------
  function applyConditionCompletion() {
    var list = document.getElementById("condition-names");
    if (!list) {
      list = document.createElement("datalist");
      list.id = "condition-names";
      document.body.appendChild(list);
    }
    var names = namesOf("environment_variables").concat(namesOf("derived_variables"));
    list.textContent = "";
    names.forEach(function (name) {
      var option = document.createElement("option");
      option.value = "${" + name + "}";
      list.appendChild(option);
    });
    names.forEach(function (first) {
      names.forEach(function (second) {
        if (first === second || names.length > 12) return;
        var option = document.createElement("option");
        option.value = "${" + first + "} and ${" + second + "}";
        list.appendChild(option);
      });
    });
    conditionInputs().forEach(function (input) { input.setAttribute("list", "condition-names"); });
  }

  // -- narrow screens: each cell says which column it is in --------------------------------
  function applyCellLabels() {
    form().querySelectorAll(".djn-group table").forEach(function (table) {
      var headers = table.querySelectorAll(":scope > thead th");
      if (!headers.length) return;
      table.querySelectorAll(":scope > tbody > tr").forEach(function (row) {
        var cells = row.querySelectorAll(":scope > td");
        var offset = cells.length - headers.length;
        cells.forEach(function (cell, index) {
          var header = headers[index - offset];
          var text = header ? header.textContent.trim() : "";
          if (text && cell.getAttribute("data-label") !== text) cell.setAttribute("data-label", text);
        });
      });
    });
  }

  function applyAll() {
    if (!form() || !document.getElementById("workflow-rules")) return;
    applyCellLabels();
    triggerRows().forEach(applyTriggerType);
    applyTriggerColumns();
    applyProductionWarnings();
    applyConditionCompletion();
  }

  var scheduled = false;
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    window.requestAnimationFrame(function () {
      scheduled = false;
      applyAll();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = form();
    if (!root) return;
    applyAll();
    root.addEventListener("input", schedule);
    root.addEventListener("change", schedule);
    new MutationObserver(function (mutations) {
      // Rows added or removed by nested_admin; not this script's own notes.
      var structural = mutations.some(function (m) {
        var target = m.target.nodeType === 1 ? m.target : m.target.parentElement;
        if (target && target.closest(".production-warning, #production-warnings")) return false;
        var nodes = Array.prototype.slice.call(m.addedNodes).concat(
          Array.prototype.slice.call(m.removedNodes));
        return nodes.some(function (node) {
          return node.nodeType === 1 && !node.classList.contains("production-warning");
        });
      });
      if (structural) schedule();
    }).observe(root, { childList: true, subtree: true });
  });
})();
