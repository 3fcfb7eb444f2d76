// clearsight serve: small conveniences only; every page works without this script.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var query = document.getElementById("query");
  if (query) {
    query.focus();
  }
  // The confidence slider shows its number as it moves (the form posts it either way).
  var slider = document.getElementById("confidence");
  var shown = document.getElementById("confidence-value");
  if (slider && shown) {
    slider.addEventListener("input", function () {
      shown.textContent = slider.value;
    });
  }
  // While the sensor is sampling (seconds for a real VLM), say so and stop double submits.
  document.querySelectorAll("form[data-busy]").forEach(function (form) {
    form.addEventListener("submit", function () {
      form.querySelectorAll("button").forEach(function (button) {
        button.disabled = true;
      });
      var status = form.querySelector(".busy");
      if (status) {
        status.textContent = form.getAttribute("data-busy");
      }
    });
  });
});
