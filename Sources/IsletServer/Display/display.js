// The web display: draws what GET /v1/devices/{id}/display says a device shows, follows the
// device's event stream, and asks again after every change. The server decides what is shown and
// in which order; this page draws it, animates changes the way iOS does, and sends the user's
// own actions (dismiss, settings) back.
(function () {
  "use strict";

  var ALERT_MS = 4000;
  var STALE_ALERT_MS = 60000;
  var STREAM_TYPES = ["started", "contentUpdated", "stateChanged", "alert", "settingsChanged", "layoutChanged"];

  function $(id) { return document.getElementById(id); }
  var phone = $("phone"), island = $("island"), detached = $("detached"), list = $("list"), banner = $("banner");

  // Which device: /devices/{id}, or the default one at /.
  var deviceId = (function () {
    var match = location.pathname.match(/^\/devices\/([^\/]+)\/?$/);
    return match ? decodeURIComponent(match[1]) : "default";
  })();

  // The device's key: from the address's fragment once (never sent to the server in a URL the
  // logs keep), then remembered in this browser.
  var key = (function () {
    var storageName = "islet.key." + deviceId, match = location.hash.match(/key=([^&]+)/);
    try {
      if (match) {
        localStorage.setItem(storageName, decodeURIComponent(match[1]));
        history.replaceState(null, "", location.pathname + location.search);
      }
      return localStorage.getItem(storageName);
    } catch (e) {
      return match ? decodeURIComponent(match[1]) : null;
    }
  })();

  // A key pasted into the address of an open display changes only the fragment: start again.
  window.addEventListener("hashchange", function () {
    if (/key=/.test(location.hash)) location.reload();
  });

  function api(method, path, body) {
    var headers = { Accept: "application/json" };
    if (key) headers.Authorization = "Bearer " + key;
    // Every write is JSON: without a key, the server takes changes only as application/json,
    // which another site's page cannot send here (docs/security.md).
    if (method !== "GET") {
      headers["Content-Type"] = "application/json";
      body = body || {};
    }
    return fetch(path, { method: method, headers: headers, body: body ? JSON.stringify(body) : undefined }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (json) {
        if (response.ok) return json;
        var error = new Error((json.error && json.error.message) || "The server answered " + response.status + ".");
        error.status = response.status;
        throw error;
      });
    });
  }

  function fromHTML(html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  // ---- Snapshot and stream ------------------------------------------------------------------

  var snapshot = null, source = null, loading = false, loadAgain = false, retryTimer = null;
  var pendingAlerts = [];

  function refresh() {
    if (loading) { loadAgain = true; return; }
    loading = true;
    clearTimeout(retryTimer);
    api("GET", "/v1/devices/" + encodeURIComponent(deviceId) + "/display").then(function (next) {
      showMessage(null);
      apply(next);
      if (!source) connect(next.eventId);
    }, function (error) {
      showMessage(error);
      // Said once, not "connecting…" for ever: a device that does not exist (yet), a refused key, no server.
      setStatus(error.status === 404 ? "missing" : error.status ? "refused" : "offline");
      retryTimer = setTimeout(refresh, 5000);
    }).then(function () {
      loading = false;
      if (loadAgain) { loadAgain = false; refresh(); }
    });
  }

  function connect(since) {
    var url = "/v1/events?device=" + encodeURIComponent(deviceId) + "&since=" + since + (key ? "&key=" + encodeURIComponent(key) : "");
    source = new EventSource(url);
    source.onopen = function () { setStatus("live"); refresh(); };
    source.onerror = function () {
      setStatus("reconnecting");
      // A refused stream (a key replaced meanwhile, say) is not retried by EventSource: start
      // over from a snapshot, which says what is wrong if something is.
      if (source.readyState === EventSource.CLOSED) {
        source = null;
        retryTimer = setTimeout(refresh, 3000);
      }
    };
    STREAM_TYPES.forEach(function (type) {
      source.addEventListener(type, function (message) {
        if (type === "alert") pendingAlerts.push(JSON.parse(message.data));
        refresh();
      });
    });
  }

  // A page left for another keeps its event stream open in the back-forward cache; a few of them
  // take every connection the browser allows to the server, and the page in front can fetch
  // nothing. Close the stream on the way out, and start again from a snapshot on the way back.
  window.addEventListener("pagehide", function () {
    if (source) { source.close(); source = null; }
  });
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) refresh();
  });

  var STATUS_TEXT = {
    live: "live", connecting: "connecting…", reconnecting: "reconnecting…",
    missing: "no such device", refused: "refused", offline: "server unreachable…"
  };

  function setStatus(status) {
    var element = $("status");
    element.dataset.status = status;
    element.textContent = STATUS_TEXT[status];
  }

  function showMessage(error) {
    var element = $("message");
    element.hidden = !error;
    element.textContent = error ? error.message : "";
    phone.dataset.error = error ? String(error.status || "network") : "";
  }

  function apply(next) {
    snapshot = next;
    $("device-name").textContent = next.device.name + (next.device.id === next.device.name ? "" : " (" + next.device.id + ")");
    var android = next.device.platform === "android";
    renderApps(next.apps, android);
    phone.classList.toggle("islet-android", android);
    // An Android phone has none of iOS's other places.
    surfaces.hidden = android;
    $("surfaces-section").hidden = android;
    if (android) {
      $("apps-title").textContent = "Live Updates";
      $("apps-hint").textContent = "Per app on this Android phone. Turning an app off ends its activities here.";
      $("help").textContent = "Live Updates sit at the top of the shade, the first with its chip in the status bar. Use a notification's × to dismiss it.";
      window.IsletAndroid.render($("android"), next, { dismiss: function (id) { dismissActivity(id); } });
      return;
    }
    renderList(next.activities);
    renderIsland();
    renderSurfaces(next.activities);
    var alerts = pendingAlerts;
    pendingAlerts = [];
    alerts.forEach(showAlert);
  }

  // ---- Morphing: updates animate as iOS animates them -----------------------------------------

  // Elements carrying data-n (their view's path in the layout), by path.
  function byPath(root) {
    var found = {};
    root.querySelectorAll("[data-n]").forEach(function (element) { found[element.dataset.n] = element; });
    return found;
  }

  // Whether no view around `element` (inside `root`) is also new: only the outermost new view fades.
  function outermost(element, root, others) {
    for (var up = element.parentElement; up && up !== root; up = up.parentElement) {
      if (up.dataset.n && !others[up.dataset.n]) return false;
    }
    return true;
  }

  // The text an element shows: while its digits roll, without the outgoing ones (an update that
  // comes mid-roll rolls from what was on screen, not from both values run together).
  function shownText(element) {
    if (!element.querySelector(".islet-roll-old")) return element.textContent;
    var copy = element.cloneNode(true);
    copy.querySelectorAll(".islet-roll-old").forEach(function (old) { old.remove(); });
    return copy.textContent;
  }

  function isPlainText(element) {
    return element.classList.contains("la-text") && !element.classList.contains("la-timer") && !element.querySelector("time, .la-timer, svg");
  }

  // Replaces `current`'s children with `next`'s: changed text blurs or rolls into its new value,
  // new views fade in, views that go fade out first.
  function morphChildren(current, next) {
    if (current.innerHTML === next.innerHTML) return;
    var generation = (current.isletGeneration || 0) + 1;
    current.isletGeneration = generation;
    var before = byPath(current), after = byPath(next);
    var texts = [], entering = [], leaving = [];
    Object.keys(after).forEach(function (path) {
      var element = after[path], previous = before[path];
      if (!previous) {
        if (outermost(element, next, before)) entering.push(element);
      } else if (isPlainText(element) && shownText(previous) !== element.textContent) {
        texts.push({ element: element, from: shownText(previous), transition: element.dataset.transition || "blur" });
      }
    });
    Object.keys(before).forEach(function (path) {
      if (!after[path] && outermost(before[path], current, after)) leaving.push(before[path]);
    });
    function swap() {
      if (current.isletGeneration !== generation) return;
      current.replaceChildren.apply(current, Array.prototype.slice.call(next.childNodes));
      window.IsletPresentation.refresh(current);
      texts.forEach(animateText);
      entering.forEach(function (element) { once(element, "islet-fade-in"); });
    }
    if (leaving.length) {
      leaving.forEach(function (element) { element.classList.add("islet-fade-out"); });
      setTimeout(swap, 200);
    } else {
      swap();
    }
  }

  function once(element, className) {
    element.classList.add(className);
    element.addEventListener("animationend", function () { element.classList.remove(className); }, { once: true });
  }

  function animateText(change) {
    var element = change.element;
    switch (change.transition) {
      case "identity": return;
      case "opacity": element.animate([{ opacity: 0 }, { opacity: 1 }], { duration: 350, easing: "ease" }); return;
      case "numeric":
      case "numeric-down":
        if (element.childNodes.length === 1 && element.firstChild.nodeType === Node.TEXT_NODE) {
          roll(element, change.from, direction(change));
          return;
        }
    }
    once(element, "islet-blur-in");
  }

  // Numeric text counts the way its numbers go, or down when the layout says it counts down.
  function direction(change) {
    if (change.transition === "numeric-down") return "down";
    var from = parseFloat(change.from.replace(/[^0-9.\-]/g, "")), to = parseFloat(change.element.textContent.replace(/[^0-9.\-]/g, ""));
    return !isNaN(from) && !isNaN(to) && to < from ? "down" : "up";
  }

  // Each character that changed rolls out as its successor rolls in; numbers align on the right.
  function roll(element, from, way) {
    var to = element.textContent, width = Math.max(from.length, to.length);
    var oldChars = pad(from, width), newChars = pad(to, width);
    element.textContent = "";
    for (var i = 0; i < width; i++) {
      if (oldChars[i] === newChars[i]) {
        element.appendChild(document.createTextNode(newChars[i]));
        continue;
      }
      var cell = document.createElement("span");
      cell.className = "islet-roll islet-" + way;
      var incoming = document.createElement("span");
      incoming.className = "islet-roll-new";
      incoming.textContent = newChars[i];
      cell.appendChild(incoming);
      if (oldChars[i]) {
        var outgoing = document.createElement("span");
        outgoing.className = "islet-roll-old";
        outgoing.setAttribute("aria-hidden", "true");
        outgoing.textContent = oldChars[i];
        cell.appendChild(outgoing);
      }
      element.appendChild(cell);
    }
    setTimeout(function () { if (element.querySelector(".islet-roll")) element.textContent = to; }, 450);
  }

  function pad(text, width) {
    var chars = Array.from(text);
    while (chars.length < width) chars.unshift("");
    return chars;
  }

  // Gives `target` the attributes of `source`, but for those the page itself owns.
  function copyAttributes(source, target, own) {
    Array.prototype.slice.call(target.attributes).forEach(function (attribute) {
      if (own.indexOf(attribute.name) < 0 && !source.hasAttribute(attribute.name)) target.removeAttribute(attribute.name);
    });
    Array.prototype.slice.call(source.attributes).forEach(function (attribute) {
      if (own.indexOf(attribute.name) < 0) target.setAttribute(attribute.name, attribute.value);
    });
  }

  // ---- The Lock Screen ------------------------------------------------------------------------

  function renderList(activities) {
    var existing = {}, positions = {};
    Array.prototype.forEach.call(list.children, function (item) {
      if (item.dataset.leaving) return;
      existing[item.dataset.id] = item;
      positions[item.dataset.id] = item.offsetTop;
    });
    var kept = {};
    activities.forEach(function (activity) {
      var item = existing[activity.id];
      if (item) {
        updateCard(item, activity);
      } else {
        item = makeItem(activity);
        once(item, "islet-fade-in");
      }
      item.dataset.state = activity.state;
      kept[activity.id] = true;
      list.appendChild(item);
    });
    Object.keys(existing).forEach(function (id) { if (!kept[id]) leave(existing[id]); });
    // Items that moved glide to their new place.
    Object.keys(positions).forEach(function (id) {
      if (!kept[id]) return;
      var shift = positions[id] - existing[id].offsetTop;
      if (Math.abs(shift) > 1) {
        existing[id].animate([{ transform: "translateY(" + shift + "px)" }, { transform: "none" }], { duration: 350, easing: "cubic-bezier(0.2, 0.9, 0.3, 1)" });
      }
    });
  }

  function makeItem(activity) {
    var item = document.createElement("div");
    item.className = "islet-item";
    item.dataset.id = activity.id;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "islet-dismiss";
    button.setAttribute("aria-label", "Dismiss " + activity.appName);
    button.textContent = "×";
    button.addEventListener("click", function (event) { event.stopPropagation(); dismiss(item); });
    item.appendChild(button);
    var card = fromHTML(activity.frames.lockScreen);
    item.appendChild(card);
    enableSwipe(item);
    window.IsletPresentation.refresh(card);
    requestAnimationFrame(function () { markTruncation(card); });
    return item;
  }

  function updateCard(item, activity) {
    var card = item.querySelector(".islet-card"), next = fromHTML(activity.frames.lockScreen);
    copyAttributes(next, card, []);
    morphChildren(card, next);
    markTruncation(card);
    setTimeout(function () { markTruncation(card); }, 250);
  }

  // A card is at most 160 points tall; what does not fit is cut, and a fade says so.
  // Measured by layout, not scrollHeight: a digit rolling in (a transform) is not content that
  // overflows.
  function markTruncation(card) {
    var bottom = parseFloat(getComputedStyle(card).paddingBottom) || 0, content = 0;
    Array.prototype.forEach.call(card.children, function (child) {
      var top = child.offsetParent === card ? child.offsetTop : child.offsetTop - card.offsetTop;
      content = Math.max(content, top + child.offsetHeight);
    });
    card.classList.toggle("islet-truncated", content + bottom > card.clientHeight + 1);
  }

  function leave(item) {
    item.dataset.leaving = "true";
    var height = item.offsetHeight;
    var animation = item.animate(
      [{ opacity: 1, height: height + "px", marginBottom: "0px" }, { opacity: 0, height: "0px", marginBottom: "-8px" }],
      { duration: 280, easing: "ease-in", fill: "forwards" }
    );
    animation.onfinish = function () { item.remove(); };
  }

  function dismissActivity(id) {
    api("POST", "/v1/activities/" + encodeURIComponent(id) + "/dismiss").then(refresh, function (error) {
      showMessage(error);
      setTimeout(function () { showMessage(null); }, 4000);
    });
  }

  function dismiss(item) {
    var card = item.querySelector(".islet-card");
    card.style.transform = "translateX(-110%)";
    card.style.opacity = "0";
    api("POST", "/v1/activities/" + encodeURIComponent(item.dataset.id) + "/dismiss").then(refresh, function (error) {
      card.style.transform = "";
      card.style.opacity = "";
      showMessage(error);
      setTimeout(function () { showMessage(null); }, 4000);
    });
  }

  // Swiping a card to the left, past a third of its width, dismisses it.
  function enableSwipe(item) {
    var startX = null, shift = 0;
    item.addEventListener("pointerdown", function (event) {
      if (event.button !== 0 || event.target.closest(".islet-dismiss")) return;
      startX = event.clientX;
      shift = 0;
      item.setPointerCapture(event.pointerId);
      item.classList.add("islet-dragging");
    });
    item.addEventListener("pointermove", function (event) {
      if (startX === null) return;
      shift = Math.min(0, event.clientX - startX);
      item.querySelector(".islet-card").style.transform = "translateX(" + shift + "px)";
    });
    function end() {
      if (startX === null) return;
      startX = null;
      item.classList.remove("islet-dragging");
      if (shift < -item.offsetWidth / 3) dismiss(item);
      else item.querySelector(".islet-card").style.transform = "";
    }
    item.addEventListener("pointerup", end);
    item.addEventListener("pointercancel", end);
  }

  // ---- The Dynamic Island ---------------------------------------------------------------------

  var expanded = null, collapseTimer = null;
  var ISLAND_OWN = ["id", "tabindex", "aria-label", "data-mode", "data-activity"];

  // The activities a surface shows, as the server says (its `surfaces`): ended ones leave the
  // island and CarPlay at once; the Lock Screen and the others keep them until dismissed.
  function shownOn(surface, activities) {
    return (activities || (snapshot ? snapshot.activities : [])).filter(function (activity) {
      return activity.surfaces.indexOf(surface) >= 0;
    });
  }

  function islandActivities() { return shownOn("dynamicIsland"); }

  function renderIsland() {
    var shown = islandActivities();
    var expandedActivity = expanded && shown.filter(function (activity) { return activity.id === expanded.id; })[0];
    if (!expandedActivity) expanded = null;
    var mode, main = null, second = null, next;
    if (expandedActivity) {
      mode = "expanded";
      main = expandedActivity;
    } else if (shown.length === 0) {
      mode = "idle";
    } else if (shown.length === 1) {
      mode = "compact";
      main = shown[0];
    } else {
      mode = "minimal";
      main = shown[0];
      second = shown[1];
    }
    if (mode === "idle") {
      next = fromHTML('<section class="islet-island islet-idle la-dark"><div class="islet-camera"></div></section>');
    } else if (mode === "minimal") {
      // The most relevant activity stays attached to the island; the next floats beside it.
      var bubble = fromHTML(main.frames.minimal).querySelector(".islet-bubble");
      next = fromHTML('<section class="islet-island islet-minimal la-dark"><div class="islet-slot islet-leading"></div><div class="islet-camera"></div><div class="islet-slot islet-trailing"></div></section>');
      next.querySelector(".islet-leading").innerHTML = bubble.innerHTML;
      if (bubble.getAttribute("style")) next.setAttribute("style", bubble.getAttribute("style"));
    } else {
      next = fromHTML(main.frames[mode]);
    }
    var activityId = main ? main.id : "";
    if (island.dataset.mode === mode && island.dataset.activity === activityId) {
      copyAttributes(next, island, ISLAND_OWN);
      morphChildren(island, next);
    } else {
      reshapeIsland(next);
    }
    island.dataset.mode = mode;
    island.dataset.activity = activityId;
    renderDetached(second);
  }

  // A new mode or activity: the island's shape springs from its old size to its new one, and its
  // content blurs in once the shape has started moving.
  function reshapeIsland(next) {
    var before = { width: island.offsetWidth, height: island.offsetHeight };
    copyAttributes(next, island, ISLAND_OWN);
    island.replaceChildren.apply(island, Array.prototype.slice.call(next.childNodes));
    island.isletGeneration = (island.isletGeneration || 0) + 1;
    window.IsletPresentation.refresh(island);
    var after = { width: island.offsetWidth, height: island.offsetHeight };
    island.isletHeight = after.height;
    if (!before.width || !island.animate) return;
    island.animate(
      [{ width: before.width + "px", height: before.height + "px" }, { width: after.width + "px", height: after.height + "px" }],
      { duration: 480, easing: "cubic-bezier(0.2, 0.9, 0.3, 1.12)" }
    );
    Array.prototype.forEach.call(island.children, function (child) {
      child.animate([{ opacity: 0, filter: "blur(6px)" }, { opacity: 1, filter: "blur(0px)" }], { duration: 320, delay: 140, easing: "ease-out", fill: "backwards" });
    });
  }

  function renderDetached(activity) {
    if (!activity) {
      detached.replaceChildren();
      detached.dataset.activity = "";
      return;
    }
    var next = fromHTML(activity.frames.minimal).querySelector(".islet-bubble");
    var current = detached.firstElementChild;
    if (current && detached.dataset.activity === activity.id) {
      copyAttributes(next, current, []);
      morphChildren(current, next);
    } else {
      detached.replaceChildren(next);
      window.IsletPresentation.refresh(next);
      once(next, "islet-fade-in");
    }
    detached.dataset.activity = activity.id;
  }

  function expand(id, forAlert) {
    clearTimeout(collapseTimer);
    expanded = { id: id, forAlert: forAlert };
    renderIsland();
    if (forAlert) {
      collapseTimer = setTimeout(function () {
        if (expanded && expanded.id === id && expanded.forAlert) collapse();
      }, ALERT_MS);
    }
  }

  function collapse() {
    clearTimeout(collapseTimer);
    expanded = null;
    renderIsland();
  }

  function toggleIsland() {
    if (island.dataset.mode === "expanded") collapse();
    else if (island.dataset.activity) expand(island.dataset.activity, false);
  }

  island.addEventListener("click", function (event) { event.stopPropagation(); toggleIsland(); });
  island.addEventListener("keydown", function (event) {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); toggleIsland(); }
  });
  detached.addEventListener("click", function (event) {
    event.stopPropagation();
    if (detached.dataset.activity) expand(detached.dataset.activity, false);
  });
  phone.addEventListener("click", function () { if (expanded) collapse(); });
  document.addEventListener("keydown", function (event) { if (event.key === "Escape" && expanded) collapse(); });

  // ---- The other surfaces: the watch, CarPlay, the Mac, the iPad, StandBy ------------------------

  var surfaces = $("surfaces");

  // Each place shows the frames the server drew for it: the most relevant activity it shows (the
  // iPad all of them, as its Lock Screen lists them; the Mac's menu bar the minimal view of each
  // when there are several). A frame is replaced only when it changed.
  function renderSurfaces(activities) {
    ["watch", "carplay", "mac", "standby", "ipad"].forEach(function (place) {
      var shown = shownOn(place, activities), html;
      if (place === "mac" && shown.length > 1) {
        html = macWithSeveral(shown);
        shown = shown.slice(0, 1);
      } else {
        if (place !== "ipad") shown = shown.slice(0, 1);
        html = shown.map(function (activity) { return activity.frames[place]; }).join("");
      }
      var element = $("surface-" + place);
      var ids = shown.map(function (activity) { return activity.id; }).join(" ");
      if (element.isletHTML === html) return;
      element.isletHTML = html;
      element.dataset.activities = ids;
      element.innerHTML = html;
      window.IsletPresentation.refresh(element);
    });
  }

  // The Mac with several activities: each one's minimal view in the menu bar, as in the island;
  // the first one's expanded view under it.
  function macWithSeveral(activities) {
    var frame = fromHTML(activities[0].frames.mac), bar = document.createElement("div");
    bar.className = "islet-menubar-item islet-menubar-minimal";
    activities.forEach(function (activity) {
      bar.appendChild(fromHTML(activity.frames.minimal).querySelector(".islet-bubble"));
    });
    frame.querySelector(".islet-menubar-item").replaceWith(bar);
    return frame.outerHTML;
  }

  $("surface-mac").addEventListener("click", function (event) {
    if (event.target.closest(".islet-menubar-item")) $("surface-mac").classList.toggle("islet-open");
  });

  // An alert's title and body show on the watch, and only there, over its card.
  function showWatchAlert(event) {
    var card = $("surface-watch").querySelector(".islet-watch");
    if (!card || $("surface-watch").dataset.activities !== event.activityId) return;
    var alert = document.createElement("div"), title = document.createElement("b"), body = document.createElement("span");
    alert.className = "islet-watch-alert";
    title.textContent = event.data.title || "";
    body.textContent = event.data.body || "";
    alert.append(title, body);
    card.appendChild(alert);
    setTimeout(function () { alert.remove(); }, ALERT_MS + 800);
  }

  function surfacesChoice() {
    var forced = new URLSearchParams(location.search).get("surfaces");
    if (forced) return forced;
    try { return localStorage.getItem("islet.surfaces") || "phone"; } catch (e) { return "phone"; }
  }

  function applySurfacesChoice(choice) {
    surfaces.dataset.show = choice;
    document.querySelectorAll("#surfaces-choice input").forEach(function (input) { input.checked = input.value === choice; });
  }

  document.querySelectorAll("#surfaces-choice input").forEach(function (input) {
    input.addEventListener("change", function () {
      try { localStorage.setItem("islet.surfaces", input.value); } catch (e) { /* private mode: this page only */ }
      applySurfacesChoice(input.value);
    });
  });

  // ---- Alerts ---------------------------------------------------------------------------------

  var bannerTimer = null;

  // An alerting update lights the island up (expanded, for a few seconds) and shows a banner.
  function showAlert(event) {
    if (Date.now() - event.time * 1000 > STALE_ALERT_MS) return;
    var activity = (snapshot.activities.filter(function (candidate) { return candidate.id === event.activityId; }))[0];
    var app = (snapshot.apps.filter(function (candidate) { return candidate.bundleId === event.bundleId; }))[0];
    var appName = activity ? activity.appName : app ? app.name : event.bundleId;
    $("banner-app").textContent = appName;
    $("banner-icon").textContent = appName.charAt(0).toUpperCase();
    $("banner-title").textContent = event.data.title || "";
    $("banner-body").textContent = event.data.body || "";
    banner.dataset.activity = event.activityId || "";
    if (activity && activity.surfaces.indexOf("dynamicIsland") >= 0) expand(activity.id, true);
    showWatchAlert(event);
    // Under the island as it will be once it has finished growing.
    banner.style.top = Math.max(58, island.parentElement.offsetTop + (island.isletHeight || island.offsetHeight) + 10) + "px";
    banner.dataset.shown = "true";
    clearTimeout(bannerTimer);
    bannerTimer = setTimeout(function () { banner.dataset.shown = "false"; }, ALERT_MS + 800);
  }

  // ---- Settings -------------------------------------------------------------------------------

  // An iPhone's settings are ActivityKit's (Live Activities, More Frequent Updates); an Android
  // phone's, its own (an app's Live Updates; it has no frequent-updates budget).
  function renderApps(apps, android) {
    var element = $("apps"), signature = JSON.stringify(apps) + android;
    if (element.dataset.signature === signature) return;
    element.dataset.signature = signature;
    element.replaceChildren();
    apps.forEach(function (app) {
      var row = document.createElement("li");
      row.dataset.bundleId = app.bundleId;
      var name = document.createElement("div");
      name.className = "islet-app-name";
      name.textContent = app.name;
      var id = document.createElement("div");
      id.className = "islet-app-id";
      id.textContent = app.bundleId;
      row.append(name, id, toggle(android ? "Live Updates" : "Live Activities", "activitiesEnabled", app, false));
      if (!android) row.append(toggle("More Frequent Updates", "frequentUpdates", app, !app.activitiesEnabled));
      // firebase-messaging's opt-in: the app is reached by its installation ID (docs/android.md).
      if (android) row.append(toggle("Firebase Installation ID", "fcmInstallationIdEnabled", app, false));
      element.appendChild(row);
    });
  }

  function toggle(title, field, app, disabled) {
    var label = document.createElement("label");
    label.className = "islet-toggle";
    var text = document.createElement("span");
    text.textContent = title;
    var input = document.createElement("input");
    input.type = "checkbox";
    input.name = field;
    input.checked = app[field];
    input.disabled = disabled;
    input.addEventListener("change", function () {
      var body = { bundleId: app.bundleId };
      body[field] = input.checked;
      api("PUT", "/v1/devices/" + encodeURIComponent(deviceId) + "/settings", body).then(refresh, function (error) {
        input.checked = !input.checked;
        showMessage(error);
      });
    });
    label.append(text, input);
    return label;
  }

  // ---- Appearance and the clock ---------------------------------------------------------------

  var darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  var forcedAppearance = new URLSearchParams(location.search).get("appearance");

  function appearance() {
    if (forcedAppearance) return forcedAppearance;
    try { return localStorage.getItem("islet.appearance") || "auto"; } catch (e) { return "auto"; }
  }

  function applyAppearance() {
    var choice = appearance();
    var dark = choice === "dark" || (choice === "auto" && darkQuery && darkQuery.matches);
    phone.classList.toggle("la-dark", !!dark);
    surfaces.classList.toggle("la-dark", !!dark);
    document.body.classList.toggle("islet-page-dark", !!dark);
    document.querySelectorAll("#appearance input").forEach(function (input) { input.checked = input.value === choice; });
  }

  document.querySelectorAll("#appearance input").forEach(function (input) {
    input.addEventListener("change", function () {
      forcedAppearance = null;
      try { localStorage.setItem("islet.appearance", input.value); } catch (e) { /* private mode: this page only */ }
      applyAppearance();
    });
  });
  if (darkQuery && darkQuery.addEventListener) darkQuery.addEventListener("change", applyAppearance);

  // The Lock Screen's clock has no AM/PM; timers, relative dates and timed progress move here too.
  function tick() {
    var now = new Date();
    $("time").textContent = now.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit" }).replace(/\s*[AP]M$/i, "");
    $("date").textContent = now.toLocaleDateString(undefined, { weekday: "long", month: "long", day: "numeric" });
    window.IsletPresentation.refresh(phone, now.getTime());
    window.IsletPresentation.refresh(surfaces, now.getTime());
    document.querySelectorAll("#android .a-status-time, #android .a-time").forEach(function (element) { element.textContent = $("time").textContent; });
  }

  // A phone taller than the window is scaled to fit it.
  function fit() {
    var scale = Math.min(1, (window.innerHeight - 40) / 876);
    phone.style.transform = scale < 1 ? "scale(" + scale + ")" : "";
    phone.style.transformOrigin = "top center";
    phone.style.marginBottom = scale < 1 ? 12 - 852 * (1 - scale) + "px" : "";
  }

  window.addEventListener("resize", fit);
  fit();
  applySurfacesChoice(surfacesChoice());
  applyAppearance();
  tick();
  setInterval(tick, 500);
  setStatus("connecting");
  refresh();
})();
