// Keeps a pending deletion's status up to date: the region marked data-refresh is fetched again
// every few seconds and replaced, until the page answers that it has ended.
(function () {
  "use strict";
  function poll() {
    var region = document.querySelector("[data-refresh]");
    if (!region) return;
    var seconds = parseInt(region.getAttribute("data-refresh"), 10) || 3;
    window.setTimeout(function () {
      fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
        .then(function (answer) { return answer.ok ? answer.text() : null; })
        .then(function (html) {
          if (html === null) { poll(); return; }
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("status");
          if (fresh) {
            region.innerHTML = fresh.innerHTML;
            if (!fresh.hasAttribute("data-refresh")) region.removeAttribute("data-refresh");
          }
          poll();
        })
        .catch(poll);
    }, seconds * 1000);
  }
  document.addEventListener("DOMContentLoaded", poll);
})();
