// rocketstore console: the little that needs a script. Every page works
// without it (then times are read in the server's zone, and forms do not
// ask before deleting).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Forms that change much ask first.
  document.querySelectorAll("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (e) {
      if (!window.confirm(f.getAttribute("data-confirm"))) {
        e.preventDefault();
      }
    });
  });
  // datetime-local fields carry no zone: send the browser's.
  document.querySelectorAll("input[data-tz]").forEach(function (i) {
    i.value = String(new Date().getTimezoneOffset());
  });
  // A form is sent once. (Its buttons stay enabled: a disabled button
  // would drop its name and value, which some forms carry.)
  document.querySelectorAll("form[method=post]").forEach(function (f) {
    f.addEventListener("submit", function (e) {
      if (e.defaultPrevented) {
        return;
      }
      if (f.dataset.sent) {
        e.preventDefault();
        return;
      }
      f.dataset.sent = "1";
    });
  });
});
