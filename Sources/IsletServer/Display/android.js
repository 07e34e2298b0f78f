// The web display as an Android 16 phone (docs/android.md, "The display"). display.js hands it
// each snapshot of an Android device: every activity with the notification its app builds
// (`android.notification`, from the last FCM message or this server's layout), and whether
// Android promotes it to a Live Update (`android.promoted`, `android.whyNotPromoted`).
(function () {
  var DEFAULT_ACCENT = "#0b57d0";

  function element(tag, className, text) {
    var made = document.createElement(tag);
    if (className) made.className = className;
    if (text != null) made.textContent = text;
    return made;
  }

  // The notification's accent: its first colored segment's, else Android's default blue.
  function accent(notification) {
    var progress = notification.progress;
    var colored = progress && (progress.segments || []).filter(function (segment) { return segment.color; })[0];
    return colored ? androidColor(colored.color) : DEFAULT_ACCENT;
  }

  // #RRGGBB or #RRGGBBAA, as the payload carries it; anything else is the default.
  function androidColor(hex) {
    return /^#[0-9A-Fa-f]{6}([0-9A-Fa-f]{2})?$/.test(hex || "") ? hex : DEFAULT_ACCENT;
  }

  function icon(appName) {
    return element("span", "a-icon", (appName || "?").charAt(0).toUpperCase());
  }

  // ProgressStyle: segments (one spanning the whole bar when none are given), filled up to the
  // value; points at their positions; the tracker at the value.
  function progressBar(progress, color) {
    var bar = element("div", "a-progress" + (progress.indeterminate ? " a-indeterminate" : ""));
    bar.setAttribute("role", "progressbar");
    bar.setAttribute("aria-valuemin", "0");
    bar.setAttribute("aria-valuemax", String(progress.max));
    bar.setAttribute("aria-valuenow", String(progress.value));
    var max = Math.max(1, progress.max);
    var segments = (progress.segments || []).length ? progress.segments : [{ length: max }];
    var total = segments.reduce(function (sum, segment) { return sum + Math.max(0, segment.length); }, 0) || 1;
    var track = element("div", "a-track");
    var start = 0, value = Math.min(Math.max(progress.value, 0), total);
    segments.forEach(function (segment) {
      var length = Math.max(0, segment.length);
      var part = element("div", "a-segment");
      part.style.flex = length + " 1 0";
      part.style.setProperty("--a-color", segment.color ? androidColor(segment.color) : color);
      var fill = element("div", "a-fill");
      fill.style.width = (length ? Math.min(100, Math.max(0, (value - start) / length * 100)) : 0) + "%";
      part.appendChild(fill);
      track.appendChild(part);
      start += length;
    });
    bar.appendChild(track);
    (progress.points || []).forEach(function (point) {
      var dot = element("div", "a-point");
      dot.style.left = Math.min(100, Math.max(0, point.position / total * 100)) + "%";
      dot.style.setProperty("--a-color", point.color ? androidColor(point.color) : color);
      bar.appendChild(dot);
    });
    if (!progress.indeterminate) {
      var tracker = element("div", "a-tracker");
      tracker.style.left = value / total * 100 + "%";
      bar.appendChild(tracker);
    }
    return bar;
  }

  function card(activity, actions) {
    var shown = activity.android, notification = shown.notification, color = accent(notification);
    var made = element("article", "a-card");
    made.dataset.id = activity.id;
    made.dataset.promoted = String(shown.promoted);
    made.style.setProperty("--a-accent", color);
    var head = element("div", "a-head");
    head.append(icon(activity.appName), element("span", null, [activity.appName, notification.subText].filter(Boolean).join(" • ") + " • now"));
    made.append(head, element("div", "a-title", notification.title));
    if (notification.text) made.appendChild(element("div", "a-text", notification.text));
    if (notification.progress) made.appendChild(progressBar(notification.progress, color));
    if (!shown.promoted) made.appendChild(element("div", "a-why", "Not a Live Update: " + shown.whyNotPromoted));
    var dismiss = element("button", "a-dismiss", "×");
    dismiss.type = "button";
    dismiss.setAttribute("aria-label", "Dismiss " + notification.title);
    dismiss.addEventListener("click", function (event) { event.stopPropagation(); actions.dismiss(activity.id); });
    made.appendChild(dismiss);
    return made;
  }

  function chip(activity) {
    var notification = activity.android.notification;
    var made = element("span", "a-chip");
    made.style.setProperty("--a-accent", accent(notification));
    made.setAttribute("aria-label", "Live Update: " + notification.title);
    made.appendChild(icon(activity.appName));
    if (notification.shortCriticalText) made.appendChild(element("span", "a-chip-text", notification.shortCriticalText));
    return made;
  }

  var STATUS_ICONS =
    '<svg viewBox="0 0 24 24"><path d="M2 22h20V2z"/></svg>' +
    '<svg viewBox="0 0 24 24"><path d="M12 21 1 8a16 16 0 0 1 22 0z"/></svg>' +
    '<svg viewBox="0 0 24 24"><path d="M16 4h-2V2h-4v2H8a1 1 0 0 0-1 1v16a1 1 0 0 0 1 1h8a1 1 0 0 0 1-1V5a1 1 0 0 0-1-1z"/></svg>';

  // Draws the whole screen from a snapshot into `screen`.
  function render(screen, snapshot, actions) {
    var now = new Date();
    var time = now.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit" }).replace(/\s*[AP]M$/i, "");
    var withNotification = snapshot.activities.filter(function (activity) { return activity.android; });
    var promoted = withNotification.filter(function (activity) { return activity.android.promoted; });
    var ordinary = withNotification.filter(function (activity) { return !activity.android.promoted; });

    var status = element("div", "a-status");
    status.appendChild(element("span", "a-status-time", time));
    if (promoted[0]) status.appendChild(chip(promoted[0]));
    var icons = element("span", "a-status-icons");
    icons.innerHTML = STATUS_ICONS;
    status.appendChild(icons);

    var clock = element("div", "a-clock");
    clock.append(element("div", "a-time", time), element("div", "a-date", now.toLocaleDateString(undefined, { weekday: "long", month: "long", day: "numeric" })));

    var shade = element("main", "a-shade");
    shade.setAttribute("aria-label", "Notifications");
    if (promoted.length) {
      shade.appendChild(element("div", "a-section", "Live Updates"));
      promoted.forEach(function (activity) { shade.appendChild(card(activity, actions)); });
    }
    if (ordinary.length) {
      shade.appendChild(element("div", "a-section", "Notifications"));
      ordinary.forEach(function (activity) { shade.appendChild(card(activity, actions)); });
    }
    if (!withNotification.length) shade.appendChild(element("div", "a-empty", "No notifications"));

    screen.replaceChildren(element("div", "a-camera"), status, clock, shade);
  }

  window.IsletAndroid = { render: render };
})();
