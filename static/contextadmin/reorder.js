/* Reordering rows from the keyboard on the workflow page.
 * nested_admin reorders rows by dragging only; a row's order is its position in the document
 * (a hand-off's is the index of its rule). Each row gets "Move up" and "Move down" buttons: they
 * move the row among its siblings, and nested_admin writes the positions from the new order
 * when the form is submitted, as after a drag. A live region says where the row went.
 */
(function () {
  "use strict";

  var ROW = ".djn-inline-form";

  function isTemplate(row) {
    return !row.id || /-empty$|__prefix__/.test(row.id);
  }

  function siblings(row) {
    return Array.prototype.filter.call(row.parentNode.children, function (other) {
      return other.matches(ROW) && !isTemplate(other) && other.id.replace(/-\d+$/, "") ===
        row.id.replace(/-\d+$/, "");
    });
  }

  function label(row) {
    var holder = row.querySelector(":scope .reorder-buttons[data-row='" + row.id + "']");
    if (holder && holder.dataset.label) return holder.dataset.label;
    var named = row.querySelector(":scope > h3 .inline_label, :scope td.original p");
    var text = named ? named.textContent.trim() : "";
    return text || "this row";
  }

  function announce(text) {
    var region = document.getElementById("reorder-status");
    if (region) region.textContent = text;
  }

  function move(row, step) {
    var rows = siblings(row);
    var index = rows.indexOf(row);
    var target = rows[index + step];
    if (!target) return;
    if (step < 0) target.parentNode.insertBefore(row, target);
    else target.parentNode.insertBefore(row, target.nextSibling);
    var button = row.querySelector(".reorder-" + (step < 0 ? "up" : "down"));
    if (button && !button.disabled) button.focus();
    else {
      var other = row.querySelector(".reorder-" + (step < 0 ? "down" : "up"));
      if (other) other.focus();
    }
    refresh();
    announce(label(row) + ": moved to position " + (index + step + 1) + " of " + rows.length);
  }

  function button(row, step) {
    var element = document.createElement("button");
    element.type = "button";
    element.className = "reorder-" + (step < 0 ? "up" : "down");
    element.textContent = step < 0 ? "↑" : "↓";
    element.addEventListener("click", function () { move(row, step); });
    return element;
  }

  function equip(row) {
    if (row.querySelector(":scope .reorder-buttons[data-row='" + row.id + "']")) return;
    // after the row's title: a stacked row's header, a table row's caption (or its cell)
    var handle = row.querySelector(":scope > h3.djn-drag-handler, :scope td.original p") ||
      row.querySelector(":scope td.original");
    if (!handle) return;
    var holder = document.createElement("span");
    holder.className = "reorder-buttons";
    holder.dataset.label = label(row);  // the row's title, read before the buttons join it
    holder.setAttribute("data-row", row.id);
    holder.appendChild(button(row, -1));
    holder.appendChild(button(row, 1));
    handle.appendChild(holder);
  }

  function refresh() {
    document.querySelectorAll("#workflow_form " + ROW).forEach(function (row) {
      if (isTemplate(row)) return;
      equip(row);
      var rows = siblings(row);
      var index = rows.indexOf(row);
      var name = label(row);
      var holder = row.querySelector(":scope .reorder-buttons[data-row='" + row.id + "']");
      if (!holder) return;
      var up = holder.querySelector(".reorder-up");
      var down = holder.querySelector(".reorder-down");
      up.disabled = index <= 0;
      down.disabled = index === rows.length - 1;
      up.setAttribute("aria-label", "Move " + name + " up");
      down.setAttribute("aria-label", "Move " + name + " down");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("workflow_form");
    // A page that may only be viewed posts no order: nothing to move.
    if (!form || !form.querySelector("input[name$='-position']")) return;
    var region = document.createElement("p");
    region.id = "reorder-status";
    region.className = "visually-hidden";
    region.setAttribute("aria-live", "polite");
    form.insertBefore(region, form.firstChild);
    refresh();
    var scheduled = false;
    new MutationObserver(function (mutations) {
      var rowsChanged = mutations.some(function (m) {
        return Array.prototype.some.call(m.addedNodes, function (node) {
          return node.nodeType === 1 && (node.matches(ROW) || node.querySelector(ROW));
        });
      });
      if (!rowsChanged || scheduled) return;
      scheduled = true;
      window.requestAnimationFrame(function () { scheduled = false; refresh(); });
    }).observe(form, { childList: true, subtree: true });
  });
})();
