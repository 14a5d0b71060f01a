// The workflow preview: "fetch now" runs the real MongoDB look-up of one database variable.

import { el, getJSON, replace, show, when } from "./dom.js";

const table = document.getElementById("preview");

async function fetchNow(button) {
  const cell = button.closest(".cell");
  const result = cell.querySelector(".prov");
  button.disabled = true;
  replace(result, el("span", { class: "muted" }, "looking up…"));
  try {
    const data = await getJSON(table.dataset.fetchUrl, {
      variable: button.dataset.variable, enterprise_id: table.dataset.enterpriseId,
    });
    cell.dataset.status = data.status;
    const value = cell.querySelector(".value");
    value.classList.toggle("absent", data.status !== "resolved");
    value.textContent = data.status === "resolved" ? show(data.value) : "(absent)";
    replace(result,
      el("code", { class: "source" }, data.source), " ",
      el("span", { class: `badge status-${data.status}` }, data.status),
      el("span", { class: "reason" }, `looked up at ${when(new Date().toISOString())}`),
      data.reason ? el("span", { class: `reason reason-${data.status}` }, data.reason) : null);
  } catch (error) {
    replace(result, el("span", { class: "error" }, error.message));
  } finally {
    button.disabled = false;
  }
}

table.addEventListener("click", (event) => {
  const button = event.target.closest("button.fetch");
  if (button) fetchNow(button);
});
