// Islet presentations: what the renderer's HTML does by itself, with no update from the server.
// Timers count, relative dates move on, timed progress fills, and dates are shown in the
// display's own locale and time zone. `IsletPresentation.refresh(root)` runs once a second.
(function (global) {
  "use strict";

  function two(n) { return n < 10 ? "0" + n : String(n); }

  // 4:05, 1:02:03 — as Text(timerInterval:) and Text(date, style: .timer) show time.
  function timerText(ms) {
    var total = Math.max(0, Math.floor(ms / 1000));
    var h = Math.floor(total / 3600), m = Math.floor(total / 60) % 60, s = total % 60;
    return h > 0 ? h + ":" + two(m) + ":" + two(s) : m + ":" + two(s);
  }

  // A span of time in its largest whole unit: "5 min", "1 day".
  function amountText(ms) {
    var mag = Math.abs(ms) / 1000;
    if (mag < 60) return Math.floor(mag) + " sec";
    if (mag < 3600) return Math.floor(mag / 60) + " min";
    if (mag < 86400) return Math.floor(mag / 3600) + " hr";
    var d = Math.floor(mag / 86400);
    return d + (d === 1 ? " day" : " days");
  }

  function relativeText(ms, now) {
    var delta = ms - now;
    if (Math.abs(delta) < 1000) return "now";
    return delta > 0 ? "in " + amountText(delta) : amountText(delta) + " ago";
  }

  function dateText(ms, style, now) {
    var date = new Date(ms);
    switch (style) {
      case "relative": return relativeText(ms, now);
      case "offset": return (ms >= now ? "+" : "-") + amountText(ms - now);
      case "date": return date.toLocaleDateString(undefined, { month: "short", day: "numeric", year: "numeric" });
      case "dateTime": return date.toLocaleString(undefined, { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
      default: return date.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit" });
    }
  }

  function setText(el, text) { if (el.textContent !== text) el.textContent = text; }

  function refresh(root, now) {
    now = now || Date.now();
    root.querySelectorAll(".la-timer").forEach(function (el) {
      if (el.dataset.date) { setText(el, timerText(Math.abs(Number(el.dataset.date) - now))); return; }
      var start = Number(el.dataset.start), end = Number(el.dataset.end), span = Math.max(end - start, 0);
      var ms = el.dataset.countsDown === "true" ? Math.min(Math.max(end - now, 0), span) : Math.min(Math.max(now - start, 0), span);
      setText(el, timerText(ms));
    });
    root.querySelectorAll("time.la-date").forEach(function (el) {
      setText(el, dateText(Number(el.dataset.date), el.dataset.style, now));
    });
    root.querySelectorAll(".la-progress[data-start]").forEach(function (el) {
      var start = Number(el.dataset.start), end = Number(el.dataset.end);
      var fraction = end > start ? (now - start) / (end - start) : 1;
      if (el.dataset.countsDown === "true") fraction = 1 - fraction;
      el.style.setProperty("--p", String(Math.min(Math.max(fraction, 0), 1)));
    });
  }

  global.IsletPresentation = { refresh: refresh, timerText: timerText, relativeText: relativeText };
})(typeof window !== "undefined" ? window : this);
