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

// The connect page's Copy buttons: each copies the text of the element its data-copy names. Without
// this script they stay hidden, and the text is there to select. A plain-HTTP home server is no
// secure context, where the Clipboard API is missing: the selection is copied instead.
(function () {
  "use strict";
  function copied(button, source) {
    var status = document.getElementById("copied");
    if (status) status.textContent = "Copied: " + source.textContent;
    var label = button.firstChild;
    label.textContent = "Copied";
    window.setTimeout(function () { label.textContent = "Copy"; }, 2000);
  }
  function copy(button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(source.textContent).then(function () { copied(button, source); });
      return;
    }
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    if (document.execCommand("copy")) copied(button, source);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () { copy(button); });
    });
  });
})();

// A passkey added on the Account page: the page is loaded again, to list it and show the
// recovery codes a first factor made (django-otp-webauthn's script sends the event).
document.addEventListener("otp_webauthn.register_complete", function (event) {
  "use strict";
  var button = event.target.closest ? event.target.closest("[data-done]") : null;
  if (button) window.location.assign(button.getAttribute("data-done"));
  window.location.reload(); // assigning a #fragment of this page alone would not load it again
});
