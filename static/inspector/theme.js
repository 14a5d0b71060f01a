// Follow the admin's theme setting (Django's admin keeps it in localStorage "theme": "auto",
// "light" or "dark"). A classic script loaded in <head>, not a module: it must run before the
// first paint so a dark page never flashes light.
(function applyTheme() {
  let theme = "auto";
  try { theme = window.localStorage.getItem("theme") || "auto"; } catch { /* storage blocked */ }
  if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}());
