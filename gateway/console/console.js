// The console's live updates: on each "changed" event the page's main
// part is fetched again and swapped in. Without it the forms still work.
"use strict";
(function () {
  const main = document.getElementById("live");
  if (!main || !window.EventSource || document.body.dataset.page === "signin") return;
  let busy = false;
  let last = null; // the last part swapped in, as fetched
  async function refresh() {
    // Do not swap under an admin who is typing a reason.
    const a = document.activeElement;
    if (busy || (a && main.contains(a) && (a.tagName === "INPUT" || a.tagName === "SELECT"))) return;
    busy = true;
    try {
      const u = new URL(location.href);
      u.searchParams.set("partial", "1");
      const res = await fetch(u, { credentials: "same-origin" });
      const html = res.ok ? await res.text() : null;
      // Swap only what changed, so the page does not flicker and a
      // button under the pointer stays the one clicked.
      if (html !== null && html !== last) {
        main.innerHTML = html;
        last = html;
      }
    } finally {
      busy = false;
    }
  }
  const es = new EventSource("/console/events");
  es.addEventListener("changed", refresh);
})();
