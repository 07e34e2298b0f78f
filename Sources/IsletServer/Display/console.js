// The console (docs/console.md): one page routed by its own path, a client of the REST API like
// any other. It acts with the key it is given (the admin's, or an app's, which the API limits to
// that app), or, on a loopback server, without one. It follows /v1/events and redraws what an
// event touches; the overview's counts are the server's (/v1/overview, since the node started),
// and its rates the differences between successive readings of them.
(function () {
  "use strict";

  // ---- Words for every reason the server gives (a test holds this table to the code's enums).
  var WORDS = {
    ignore: {
      olderTimestamp: "older than the last applied update",
      timestampTooFarAhead: "its timestamp is too far in the future",
      activityEnded: "the activity had ended",
      activityDismissed: "the activity had been dismissed",
      contentStateMismatch: "the content state does not fit the type's registered shape",
      attributesMismatch: "the attributes do not fit the type's registered shape",
      budgetExceeded: "over the hourly budget of priority-10 pushes",
      invalidPayload: "the payload lacks what its event needs",
      denied: "Live Activities are off for the app on the device",
      attributesTooLarge: "the attributes and content are over the size limit",
      targetMaximumExceeded: "the app already has its most live activities on the device",
      globalMaximumExceeded: "the device already has its most live activities",
      channelNotFound: "it names a broadcast channel that does not exist"
    },
    state: {
      scheduledStart: "its scheduled start came",
      staleDateReached: "its stale date passed",
      contentUpdated: "fresh content arrived",
      endedByApp: "the app ended it",
      maxDurationReached: "it reached the longest an activity may run",
      dismissalPolicy: "its dismissal policy's time came",
      userDismissed: "the person dismissed it",
      appDisabled: "Live Activities were turned off for the app",
      renewed: "Islet renewed it before its maximum duration ran out: a successor took its place",
      endedOnPhone: "it ended on the phone, as its app reported"
    },
    outcome: {
      queued: "queued for Apple",
      delivered: "Apple accepted it",
      retrying: "to be tried again",
      failed: "given up",
      tokenRetired: "Apple said the token is gone",
      held: "held",
      coalesced: "replaced by a newer change",
      dropped: "not sent"
    }
  };
  window.isletConsoleWords = WORDS;

  var STATES = ["pending", "active", "stale", "ended", "dismissed"];
  var main = document.getElementById("main");
  var key = readKey();
  var whoAmI = null; // "admin", "app <bundleId>", or "keyless"
  var source = null;
  var listeners = [];

  // ---- Keys: given once as #key=…, kept for the tab in sessionStorage, never in the address.
  function readKey() {
    var match = location.hash.match(/key=([^&]+)/);
    if (match) {
      sessionStorage.setItem("islet.console.key", decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem("islet.console.key");
  }

  function askForKey(message) {
    var dialog = document.getElementById("key-dialog");
    document.getElementById("key-error").textContent = message || "";
    if (!dialog.open) dialog.showModal();
  }
  document.getElementById("key-form").addEventListener("submit", function (event) {
    event.preventDefault();
    key = document.getElementById("key-input").value.trim();
    sessionStorage.setItem("islet.console.key", key);
    document.getElementById("key-dialog").close();
    start();
  });

  // ---- The API.
  function ApiError(status, reason, message) {
    this.status = status; this.reason = reason; this.message = message;
  }
  function api(method, path, body) {
    var headers = { Accept: "application/json" };
    if (key) headers.Authorization = "Bearer " + key;
    // Every change says it is JSON, with a body or without: the server takes a keyless change
    // only so (a form on another page cannot send it; docs/security.md).
    if (body !== undefined || method !== "GET") headers["Content-Type"] = "application/json";
    return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (response) {
        return response.text().then(function (text) {
          var json = null;
          try { json = text ? JSON.parse(text) : null; } catch (error) { json = null; }
          if (!response.ok) {
            var detail = json && json.error ? json.error : { reason: "http" + response.status, message: text };
            if (response.status === 401) askForKey(detail.message);
            throw new ApiError(response.status, detail.reason, detail.message);
          }
          return json;
        });
      });
  }

  // ---- Small helpers.
  function el(tag, attributes, children) {
    var node = document.createElement(tag);
    for (var name in attributes || {}) {
      var value = attributes[name];
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = value;
      else if (name === "class") node.className = value;
      else if (name.slice(0, 2) === "on") node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : value);
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }
  function svg(tag, attributes, children) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var name in attributes || {}) {
      if (name === "text") node.textContent = attributes[name];
      else if (name.slice(0, 2) === "on") node.addEventListener(name.slice(2), attributes[name]);
      else node.setAttribute(name, attributes[name]);
    }
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  }
  function chip(text, kind) { return el("span", { class: "chip " + (kind || text), text: text }); }
  function short(id) { return id ? id.slice(0, 8) : ""; }
  function clock(seconds) {
    if (seconds === undefined || seconds === null) return "";
    var date = new Date(seconds * 1000);
    return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  }
  function dateTime(seconds) {
    if (seconds === undefined || seconds === null) return "";
    var date = new Date(seconds * 1000);
    return date.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + clock(seconds);
  }
  function ago(seconds) {
    if (!seconds) return "";
    var delta = Math.max(0, Date.now() / 1000 - seconds);
    if (delta < 60) return Math.round(delta) + " s ago";
    if (delta < 3600) return Math.round(delta / 60) + " min ago";
    if (delta < 86400) return Math.round(delta / 3600) + " h ago";
    return Math.round(delta / 86400) + " d ago";
  }
  function toast(text) {
    var node = el("div", { class: "toast", role: "status", text: text });
    document.body.appendChild(node);
    setTimeout(function () { node.remove(); }, 3200);
  }
  function confirmAction(title, text) {
    var dialog = document.getElementById("confirm-dialog");
    document.getElementById("confirm-title").textContent = title;
    document.getElementById("confirm-text").textContent = text;
    return new Promise(function (resolve) {
      dialog.addEventListener("close", function done() {
        dialog.removeEventListener("close", done);
        resolve(dialog.returnValue === "ok");
      });
      dialog.returnValue = "cancel";
      dialog.showModal();
    });
  }
  document.querySelectorAll("#confirm-dialog button").forEach(function (button) {
    button.addEventListener("click", function (event) {
      event.preventDefault();
      document.getElementById("confirm-dialog").close(button.value);
    });
  });
  function act(title, text, method, path, body, done) {
    return confirmAction(title, text).then(function (ok) {
      if (!ok) return;
      return api(method, path, body).then(function (answer) {
        toast(title + ": done");
        if (done) done(answer);
      }, function (error) { toast(title + ": " + (error.message || error.reason)); });
    });
  }
  function debounce(work, wait) {
    var timer = null;
    return function () {
      if (timer) return;
      timer = setTimeout(function () { timer = null; work(); }, wait);
    };
  }

  // ---- The live stream: one EventSource, views subscribe while shown.
  function connect() {
    if (source) source.close();
    var live = document.getElementById("live");
    source = new EventSource("/v1/events" + (key ? "?key=" + encodeURIComponent(key) : ""));
    source.onopen = function () { live.dataset.state = "live"; live.textContent = "live"; };
    source.onerror = function () {
      live.dataset.state = "down"; live.textContent = "reconnecting";
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 2000);
    };
    ["started", "contentUpdated", "stateChanged", "alert", "updateIgnored", "delivery", "pushTokenUpdated", "settingsChanged", "layoutChanged"]
      .forEach(function (type) {
        source.addEventListener(type, function (message) {
          var event;
          try { event = JSON.parse(message.data); } catch (error) { return; }
          listeners.forEach(function (listener) { listener(event); });
        });
      });
  }

  // ---- Routing.
  function navigate(path, replace) {
    if (replace) history.replaceState(null, "", path); else history.pushState(null, "", path);
    route();
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-link]");
    if (!link || event.metaKey || event.ctrlKey || event.shiftKey) return;
    event.preventDefault();
    navigate(link.getAttribute("href"));
  });
  window.addEventListener("popstate", route);

  var cleanup = [];
  function route() {
    cleanup.forEach(function (stop) { stop(); });
    cleanup = [];
    listeners = [];
    var path = location.pathname.replace(/\/+$/, "");
    var view = "overview", match;
    main.textContent = "";
    if (path === "/console/activities") { view = "activities"; activitiesView(); }
    else if ((match = path.match(/^\/console\/activities\/([^/]+)$/))) { view = "activities"; timelineView(decodeURIComponent(match[1])); }
    else if (path === "/console/pushes") { view = "pushes"; pushesView(); }
    else if (path === "/console/webhooks") { view = "webhooks"; webhooksView(); }
    else if (path === "/console/sends") { view = "sends"; sendsView(); }
    else if (path === "/console/installations") { view = "installations"; installationsView(); }
    else overviewView();
    document.querySelectorAll(".bar nav a").forEach(function (link) {
      if (link.dataset.view === view) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
    });
  }
  function every(work, milliseconds) {
    var timer = setInterval(work, milliseconds);
    cleanup.push(function () { clearInterval(timer); });
  }
  function failed(error) {
    if (error && error.status === 401) return;
    main.appendChild(el("p", { class: "notice", text: (error && error.message) || String(error) }));
  }

  // ---- 1. Overview.
  // The server's totals as the page read them, the last minute or so: rates are their growth.
  var readings = [];
  function overviewView() {
    readings = [];
    var title = el("h1", { text: "Overview" });
    var sub = el("p", { class: "sub", text: "" });
    var population = el("div", { class: "figures" });
    var states = el("div", { class: "bars", id: "states" });
    var rates = el("div", {});
    var drops = el("div", { class: "rows", id: "drops" });
    var delivery = el("div", { class: "rows", id: "delivery" });
    var answers = el("div", { class: "rows", id: "answers" });
    var store = el("div", { class: "rows", id: "store" });
    main.appendChild(title);
    main.appendChild(sub);
    main.appendChild(el("div", { class: "grid" }, [
      el("section", { class: "panel" }, [el("h2", { text: "Apps, devices, phones" }), population]),
      el("section", { class: "panel" }, [el("h2", { text: "Activities by state" }), states]),
      el("section", { class: "panel" }, [el("h2", { text: "Updates and pushes per second (last minute)" }), rates])
    ]));
    main.appendChild(el("div", { class: "grid" }, [
      el("section", { class: "panel" }, [el("h2", { text: "Dropped updates, by reason" }), drops]),
      el("section", { class: "panel" }, [el("h2", { text: "Delivery to phones" }), delivery]),
      el("section", { class: "panel" }, [el("h2", { text: "Apple's answers, by status" }), answers]),
      el("section", { class: "panel" }, [el("h2", { text: "Store" }), store])
    ]));

    function figure(label, value, id) {
      return el("div", { class: "figure" }, [el("div", { class: "value", id: id, text: String(value) }), el("div", { class: "label", text: label })]);
    }
    function drawCounts(counts) {
      var since = "none since the server started, " + dateTime(counts.since);
      drawRows(drops, counts.dropped, function (reason) { return WORDS.ignore[reason] || reason; }, since);
      drawRows(answers, counts.answers, function (status) {
        return status === "200" ? "200 accepted" : status === "none" ? "no answer" : status;
      }, since);
      rates.textContent = "";
      rates.appendChild(sparkline("Updates", "updates", counts.updates));
      rates.appendChild(sparkline("Pushes to Apple", "pushes", counts.pushes));
    }
    // What the data is kept in, and what a failover of its database keeps (docs/cluster.md §7),
    // as the server asked the database at this reading.
    function drawStore(s) {
      store.textContent = "";
      store.appendChild(el("span", { text: "kind" }));
      store.appendChild(el("span", { class: "num", "data-store": "kind", text: s.kind === "postgresql" ? "PostgreSQL" : "SQLite" }));
      store.appendChild(el("span", { class: "empty fit", "data-store": "location", text: s.location }));
      var r = s.replication;
      store.appendChild(el("span", { text: "replication" }));
      store.appendChild(el("span", { class: "health", "data-store": "replication", "data-status": !r ? "" : r.mode === "synchronous" ? "ok" : "degraded",
        text: r ? r.mode : "none" }));
      store.appendChild(el("span", { class: "empty", "data-store": "failover", text: !r ? "One file on this machine: no standby to fail over to." :
        r.mode === "synchronous" ? "A failover to the standby keeps every acknowledged change (synchronous_standby_names: " + r.synchronousStandbyNames + ")." :
        "A failover may lose the last acknowledged changes: no synchronous standby" +
          (r.synchronousStandbyNames ? "" : " (synchronous_standby_names is empty)") + "." }));
    }
    function load() {
      return api("GET", "/v1/overview").then(function (overview) {
        sub.textContent = (overview.bundleId ? "App " + overview.bundleId : "Every app") + " · read " + clock(overview.time) +
          " · counted since the server started, " + dateTime(overview.counts.since);
        readings.push({ time: Date.now(), updates: overview.counts.updates, pushes: overview.counts.pushes });
        while (readings.length > 2 && readings[1].time < Date.now() - 65000) readings.shift();
        drawCounts(overview.counts);
        population.textContent = "";
        population.appendChild(figure("apps", overview.population.apps, "apps"));
        population.appendChild(figure("devices", overview.population.devices, "devices"));
        population.appendChild(figure("phones", overview.population.phones, "phones"));
        states.textContent = "";
        var most = Math.max.apply(null, STATES.map(function (state) { return overview.activities[state] || 0; }).concat([1]));
        STATES.forEach(function (state) {
          var value = overview.activities[state] || 0;
          states.appendChild(el("span", { text: state }));
          states.appendChild(el("div", { class: "track" }, [el("div", { class: "fill", style: "width:" + (100 * value / most).toFixed(1) + "%" })]));
          states.appendChild(el("span", { class: "num", "data-state": state, text: String(value) }));
        });
        var d = overview.delivery;
        delivery.textContent = "";
        delivery.appendChild(el("span", { text: "status" }));
        delivery.appendChild(el("span", { class: "health", "data-status": d.status, text: d.status }));
        if (d.reason) delivery.appendChild(el("span", { class: "empty", text: d.reason }));
        [["waiting in the outbox", d.depth], ["to be tried again", d.retrying], ["held", d.held]].forEach(function (row) {
          delivery.appendChild(el("span", { text: row[0] }));
          delivery.appendChild(el("span", { class: "num", text: String(row[1]) }));
        });
        delivery.appendChild(el("span", { text: "oldest undelivered" }));
        delivery.appendChild(el("span", { class: "num", text: d.oldest ? ago(d.oldest) : "none" }));
        drawStore(overview.store);
      }, failed);
    }
    load();
    var reload = debounce(load, 700);
    listeners.push(function () { reload(); });
    every(load, 5000);
  }
  function drawRows(container, counts, words, empty) {
    container.textContent = "";
    var names = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a]; });
    if (!names.length) container.appendChild(el("span", { class: "empty", text: empty }));
    names.forEach(function (name) {
      container.appendChild(el("span", { "data-reason": name, text: words(name) }));
      container.appendChild(el("span", { class: "num", "data-count": name, text: String(counts[name]) }));
    });
  }
  // A count's growth per second over the last minute, as a filled line: one point per 5 s. The
  // growth between two readings is spread evenly over the time between them.
  function sparkline(label, kind, total) {
    var now = Date.now(), start = now - 60000, buckets = [];
    for (var index = 0; index < 12; index++) buckets.push(0);
    for (var pair = 1; pair < readings.length; pair++) {
      var from = readings[pair - 1], to = readings[pair], growth = to[kind] - from[kind];
      if (growth <= 0 || to.time <= from.time) continue;
      for (var bucket = 0; bucket < 12; bucket++) {
        var left = start + bucket * 5000, overlap = Math.min(to.time, left + 5000) - Math.max(from.time, left);
        if (overlap > 0) buckets[bucket] += growth * overlap / (to.time - from.time) / 5;
      }
    }
    var most = Math.max.apply(null, buckets.concat([1]));
    var points = buckets.map(function (value, index) { return [index * (300 / 11), 52 - 48 * value / most]; });
    var line = "M" + points.map(function (point) { return point[0].toFixed(1) + " " + point[1].toFixed(1); }).join(" L");
    var current = buckets[11];
    return el("div", {}, [
      el("div", { class: "rows" }, [
        el("span", {}, [label + " ", el("span", { class: "total", "data-total": kind, text: total + " since the server started" })]),
        el("span", { class: "num", "data-rate": kind, text: current.toFixed(1) + "/s" })
      ]),
      svg("svg", { class: "spark " + kind, viewBox: "0 0 300 56", preserveAspectRatio: "none", role: "img", "aria-label": label + " per second" }, [
        svg("path", { class: "area", d: line + " L300 56 L0 56 Z" }),
        svg("path", { class: "line", d: line, "vector-effect": "non-scaling-stroke" })
      ])
    ]);
  }

  // ---- 2. Activities.
  function activitiesView() {
    var params = new URLSearchParams(location.search);
    var search = el("input", { type: "search", placeholder: "Id or key (first characters)", value: params.get("q") || "", "aria-label": "Search" });
    var state = el("select", { "aria-label": "State" }, [el("option", { value: "", text: "Any state" })].concat(
      STATES.map(function (name) { return el("option", { value: name, text: name }); })));
    state.value = params.get("state") || "";
    var app = el("input", { type: "text", placeholder: "App (bundle id)", value: params.get("bundleId") || "", "aria-label": "App" });
    var type = el("input", { type: "text", placeholder: "Type", value: params.get("type") || "", "aria-label": "Type" });
    var body = el("tbody", {});
    var pager = el("div", { class: "pager" });
    var cursors = [null];
    main.appendChild(el("h1", { text: "Activities" }));
    main.appendChild(el("p", { class: "sub", text: "Most relevant first, as a device shows them." }));
    main.appendChild(el("div", { class: "toolbar" }, [search, state, app, type]));
    main.appendChild(el("div", { class: "table-wrap" }, [el("table", { id: "activities", class: "stack" }, [
      el("thead", {}, [el("tr", {}, [
        el("th", { text: "Activity" }), el("th", { text: "App" }), el("th", { text: "Type" }),
        el("th", { text: "Device" }), el("th", { text: "State" }), el("th", { text: "Last update", class: "num" }),
        el("th", { text: "Relevance", class: "num" })
      ])]),
      body
    ])]));
    main.appendChild(pager);

    function query(cursor) {
      var query = new URLSearchParams();
      if (search.value.trim()) query.set("q", search.value.trim());
      if (state.value) query.set("state", state.value);
      if (app.value.trim()) query.set("bundleId", app.value.trim());
      if (type.value.trim()) query.set("type", type.value.trim());
      return query;
    }
    function load() {
      var address = query();
      history.replaceState(null, "", "/console/activities" + (address.toString() ? "?" + address : ""));
      var page = query();
      page.set("limit", "50");
      var cursor = cursors[cursors.length - 1];
      if (cursor) page.set("cursor", cursor);
      return api("GET", "/v1/activities?" + page).then(function (listing) {
        body.textContent = "";
        if (!listing.activities.length) body.appendChild(el("tr", {}, [el("td", { class: "empty", colspan: "7", text: "No activity matches." })]));
        listing.activities.forEach(function (activity) {
          var updated = activity.lastUpdateTimestamp || activity.startedAt || activity.createdAt;
          body.appendChild(el("tr", { class: "open", "data-id": activity.id, onclick: function () { navigate("/console/activities/" + activity.id); } }, [
            el("td", { "data-label": "Activity" }, [el("a", { href: "/console/activities/" + activity.id, "data-link": true, class: "mono", text: short(activity.id) }),
              activity.key ? el("div", { class: "detail mono", text: activity.key }) : null]),
            el("td", { "data-label": "App", text: activity.bundleId }),
            el("td", { "data-label": "Type", text: activity.attributesType }),
            el("td", { "data-label": "Device", text: activity.device }),
            el("td", { "data-label": "State" }, [chip(activity.activityState)]),
            el("td", { class: "num", "data-label": "Last update", title: dateTime(updated), text: ago(updated) }),
            el("td", { class: "num", "data-label": "Relevance", text: String(activity.content.relevanceScore || 0) })
          ]));
        });
        pager.textContent = "";
        pager.appendChild(el("span", { text: "Page " + cursors.length }));
        pager.appendChild(el("button", { text: "First", disabled: cursors.length === 1, onclick: function () { cursors = [null]; load(); } }));
        pager.appendChild(el("button", { text: "Previous", disabled: cursors.length === 1, onclick: function () { cursors.pop(); load(); } }));
        pager.appendChild(el("button", { text: "Next", id: "next-page", disabled: !listing.next, onclick: function () { cursors.push(listing.next); load(); } }));
      }, failed);
    }
    var reload = debounce(function () { cursors = [null]; load(); }, 300);
    [search, app, type].forEach(function (input) { input.addEventListener("input", reload); });
    state.addEventListener("change", reload);
    load();
    var refresh = debounce(load, 800);
    listeners.push(function (event) { if (event.activityId) refresh(); });
  }

  // ---- 3. An activity's timeline.
  function timelineView(id) {
    var header = el("div", { class: "head" });
    var fit = el("div", { class: "notice fit", id: "fit", role: "status", hidden: true });
    var standing = el("div", { class: "standing", id: "standing", hidden: true });
    var axisHolder = el("section", { class: "panel" });
    var rows = el("tbody", {});
    var side = el("aside", { class: "side" });
    var selected = null;
    main.appendChild(header);
    main.appendChild(standing);
    main.appendChild(fit);
    main.appendChild(axisHolder);
    main.appendChild(el("div", { class: "split", style: "margin-top:14px" }, [
      el("div", { class: "table-wrap" }, [el("table", { class: "events", id: "events" }, [
        el("thead", {}, [el("tr", {}, [el("th", { text: "Time" }), el("th", { text: "What happened" })])]), rows
      ])]),
      side
    ]));
    var activity = null, events = [];

    function load() {
      // The card as it stands, for what its state lacks; a drawing that fails hides nothing else.
      var now = api("GET", "/v1/activities/" + encodeURIComponent(id) + "/presentation").catch(function () { return null; });
      // "Why isn't it showing?" — for a renewed activity, its chain's live one's.
      var status = api("GET", "/v1/activities/" + encodeURIComponent(id) + "/status").catch(function () { return null; });
      return Promise.all([exactActivity(id), wholeHistory(id), now, status]).then(function (answers) {
        activity = answers[0];
        events = answers[1];
        drawHeader();
        drawStanding(answers[3]);
        drawFit(answers[2]);
        drawAxis();
        drawRows();
        if (!selected && events.length) select(events[events.length - 1].id);
        else if (selected) select(selected);
      }, function (error) {
        main.textContent = "";
        main.appendChild(el("h1", { text: "Not found" }));
        main.appendChild(el("p", { class: "notice", text: error.message || "No such activity." }));
      });
    }
    function drawHeader() {
      header.textContent = "";
      var actions = el("div", { class: "actions" });
      var live = ["pending", "active", "stale"].indexOf(activity.activityState) >= 0;
      if (live) actions.appendChild(el("button", { class: "danger", id: "end", text: "End", onclick: function () {
        act("End the activity", "It ends now and stays on the Lock Screen until its dismissal policy removes it.", "POST",
          "/v1/activities/" + activity.id + "/end", {});
      } }));
      if (activity.activityState !== "dismissed") actions.appendChild(el("button", { class: "danger", id: "dismiss", text: "Dismiss", onclick: function () {
        act("Dismiss the activity", "It leaves the Lock Screen and the Dynamic Island at once.", "POST", "/v1/activities/" + activity.id + "/dismiss", {});
      } }));
      if (whoAmI !== "app" && activity.pushType) actions.appendChild(el("button", { id: "rotate", text: "Rotate token", onclick: function () {
        act("Rotate the push token", "The activity gets a new push token; the old one answers 410 from now on.", "POST",
          "/v1/activities/" + activity.id + "/rotate-push-token", {});
      } }));
      actions.appendChild(el("button", { id: "pause", text: "Delivery…", onclick: function () { deliverySwitch(activity.bundleId); } }));
      header.appendChild(el("div", { class: "title" }, [
        el("h1", { class: "mono", text: activity.id }),
        el("div", { class: "facts" }, [
          el("span", {}, ["app ", el("b", { text: activity.bundleId })]),
          el("span", {}, ["type ", el("b", { text: activity.attributesType })]),
          el("span", {}, ["device ", el("b", { text: activity.device })]),
          el("span", {}, [chip(activity.activityState)]),
          activity.key ? el("span", {}, ["key ", el("b", { class: "mono", text: activity.key })]) : null,
          activity.renewedFrom ? el("span", {}, ["renews ", el("a", { class: "mono", href: "/console/activities/" + encodeURIComponent(activity.renewedFrom), text: activity.renewedFrom.slice(0, 8) })]) : null,
          activity.renewedBy ? el("span", { id: "renewed-by" }, ["renewed by ", el("a", { class: "mono", href: "/console/activities/" + encodeURIComponent(activity.renewedBy), text: activity.renewedBy.slice(0, 8) })]) : null,
          activity.renewAt ? el("span", {}, ["renews at ", el("b", { text: clock(activity.renewAt) })]) : null,
          el("span", {}, ["relevance ", el("b", { text: String(activity.content.relevanceScore || 0) })])
        ])
      ]));
      header.appendChild(actions);
    }
    // What the phone has, the budget, the renewal, the last refusal: the status's sentences,
    // for the activity itself (a renewed one's status is its chain's live one's: not repeated).
    function drawStanding(status) {
      standing.textContent = "";
      standing.hidden = !status || status.id !== activity.id;
      if (standing.hidden) return;
      standing.appendChild(el("ul", {}, status.summary.map(function (line) { return el("li", { text: line }); })));
    }
    // A card whose state does not fit its layout is said at the top, in the warnings' words.
    function drawFit(presentation) {
      var messages = [];
      ((presentation && presentation.warnings) || []).forEach(function (warning) {
        if (messages.indexOf(warning.message) < 0) messages.push(warning.message);
      });
      fit.textContent = "";
      fit.hidden = !messages.length;
      if (!messages.length) return;
      fit.appendChild(el("b", { text: "The card does not fit its layout: " }));
      fit.appendChild(document.createTextNode(messages.join("; ") + ". "));
      fit.appendChild(el("span", { text: "It is drawn all the same; select an event to see where each is read." }));
    }
    function drawAxis() {
      axisHolder.textContent = "";
      axisHolder.appendChild(el("h2", { text: "Timeline" }));
      if (!events.length) return;
      var first = events[0].time, last = Math.max(events[events.length - 1].time, first + 1);
      // Drawn at the panel's own width in pixels, so text and dots keep their shapes on a phone.
      var width = Math.max(300, axisHolder.clientWidth - 32), left = 62, right = 16;
      var ticks = width < 600 ? 2 : 4;
      function x(time) { return left + (width - left - right) * (time - first) / (last - first); }
      var nodes = [];
      [["content", 30], ["state", 58], ["delivery", 90]].forEach(function (lane) {
        nodes.push(svg("text", { class: "lane", x: 0, y: lane[1] + 4, text: lane[0] }));
        nodes.push(svg("line", { class: "tick", x1: left, x2: width - right, y1: lane[1], y2: lane[1] }));
      });
      for (var tick = 0; tick <= ticks; tick++) {
        var time = first + (last - first) * tick / ticks;
        nodes.push(svg("text", { class: "label", x: x(time), y: 116, "text-anchor": tick === 0 ? "start" : tick === ticks ? "end" : "middle", text: clock(time) }));
      }
      events.forEach(function (event) {
        var cx = x(event.time), attributes = { "data-event": event.id, onclick: function () { select(event.id); } };
        var node = null;
        if (event.type === "started" || event.type === "contentUpdated") node = svg("circle", Object.assign({ class: "content", cx: cx, cy: 30, r: 6 }, attributes));
        else if (event.type === "alert") node = svg("circle", Object.assign({ class: "alertdot", cx: cx, cy: 30, r: 4 }, attributes));
        else if (event.type === "updateIgnored") node = svg("circle", Object.assign({ class: "ignored", cx: cx, cy: 30, r: 6 }, attributes));
        else if (event.type === "stateChanged") node = svg("rect", Object.assign({ class: "state", x: cx - 5, y: 52, width: 10, height: 12, rx: 2 }, attributes));
        else if (event.type === "delivery" && event.data) node = svg("rect", Object.assign({ class: "attempt " + event.data.outcome, x: cx - 5, y: 84, width: 10, height: 12, rx: 2 }, attributes));
        if (node) {
          node.appendChild(svg("title", { text: describe(event).title }));
          nodes.push(node);
        }
      });
      axisHolder.appendChild(svg("svg", { class: "axis", viewBox: "0 0 " + width + " 120", width: width, height: 120, role: "img", "aria-label": "The activity's events on a time axis" }, nodes));
    }
    function drawRows() {
      rows.textContent = "";
      // A delivery may be sent again from its latest line only, while that says it did not arrive.
      var latest = {};
      events.forEach(function (event) { if (event.type === "delivery" && event.data) latest[event.data.delivery] = event.id; });
      events.slice().reverse().forEach(function (event) {
        var words = describe(event);
        var cell = el("td", { "data-label": "What happened" }, [words.head, words.why ? el("span", { class: "why", text: " — " + words.why }) : null]);
        if (words.detail) cell.appendChild(el("div", { class: "detail", text: words.detail }));
        if (event.type === "delivery" && event.data && event.data.event !== "renew" && latest[event.data.delivery] === event.id && ["failed", "held", "retrying"].indexOf(event.data.outcome) >= 0) {
          cell.appendChild(el("button", { class: "retry", "data-delivery": event.data.delivery, style: "margin-top:4px", text: "Send again", onclick: function (clicked) {
            clicked.stopPropagation();
            act("Send the delivery again", "Delivery " + event.data.delivery + " goes out again now, to Apple or to FCM.", "POST", "/v1/deliveries/" + event.data.delivery + "/retry", {});
          } }));
        }
        rows.appendChild(el("tr", { class: "open", "data-event": event.id, "data-type": event.type, onclick: function () { select(event.id); } }, [
          el("td", { class: "time", "data-label": "Time", title: dateTime(event.time), text: clock(event.time) }), cell
        ]));
      });
    }
    function select(eventId, axisOnly) {
      selected = eventId;
      rows.querySelectorAll("tr").forEach(function (row) { if (String(row.dataset.event) === String(eventId)) row.setAttribute("data-selected", ""); else row.removeAttribute("data-selected"); });
      axisHolder.querySelectorAll("[data-event]").forEach(function (node) {
        node.classList.toggle("selected", String(node.getAttribute("data-event")) === String(eventId));
      });
      var event = events.filter(function (candidate) { return candidate.id === eventId; })[0];
      if (!event || axisOnly) return;
      side.textContent = "";
      var preview = el("div", { class: "preview la-content", id: "preview" });
      var warnings = el("section", { class: "panel warnings", id: "warnings", hidden: true });
      side.appendChild(el("section", { class: "panel" }, [el("h2", { text: "As it looked after event " + event.id }), preview]));
      side.appendChild(warnings);
      side.appendChild(el("section", { class: "panel" }, [el("details", { id: "raw" }, [el("summary", { text: "The event as JSON" }), el("pre", { class: "json", text: JSON.stringify(event, null, 2) })])]));
      api("GET", "/v1/activities/" + encodeURIComponent(id) + "/presentation?at=" + event.id).then(function (presentation) {
        preview.innerHTML = frames(presentation);
        drawWarnings(warnings, presentation.warnings || []);
      }, function (error) { preview.textContent = error.message || "Cannot draw it."; });
    }
    load();
    var refresh = debounce(load, 250);
    listeners.push(function (event) { if (event.activityId === id || (activity && event.activityId === activity.id)) refresh(); });
    var redraw = debounce(function () { drawAxis(); if (selected) select(selected, true); }, 150);
    window.addEventListener("resize", redraw);
    cleanup.push(function () { window.removeEventListener("resize", redraw); });
  }
  // What a presentation's state lacks (docs/layouts.md, Warnings), one entry per binding and
  // problem: its words, then each region that reads it and where in the layout.
  var REGIONS = {
    lockScreen: "Lock Screen", expandedLeading: "expanded, leading", expandedTrailing: "expanded, trailing",
    expandedCenter: "expanded, center", expandedBottom: "expanded, bottom", compactLeading: "compact, leading",
    compactTrailing: "compact, trailing", minimal: "minimal", small: "small (watch, CarPlay)"
  };
  function drawWarnings(container, warnings) {
    container.textContent = "";
    container.hidden = !warnings.length;
    if (!warnings.length) return;
    var entries = [], byBinding = {};
    warnings.forEach(function (warning) {
      var key = warning.binding + " " + warning.problem;
      if (!byBinding[key]) entries.push(byBinding[key] = { warning: warning, places: [] });
      byBinding[key].places.push(warning);
    });
    // A warning with no binding is about the layout itself (a small region it does not declare).
    var title = warnings.every(function (warning) { return warning.binding; }) ? "The state does not fit the layout " : "The drawing has warnings ";
    container.appendChild(el("h2", {}, [title, chip(String(entries.length), "warn")]));
    container.appendChild(el("p", { class: "sub", text: "Drawn all the same: a missing value shows nothing, one of the wrong kind as it is." }));
    container.appendChild(el("ul", {}, entries.map(function (entry) {
      return el("li", { "data-binding": entry.warning.binding, "data-problem": entry.warning.problem }, [
        el("span", { class: "message", text: entry.warning.message })
      ].concat(entry.places.map(function (place) {
        return el("span", { class: "where" }, [(REGIONS[place.region] || place.region) + " ", el("code", { text: place.path })]);
      })));
    })));
  }
  // Every page of an activity's history.
  // The activity under this very id: a read by id follows a renewal chain to its live end,
  // the listing by id does not.
  function exactActivity(id) {
    return api("GET", "/v1/activities?q=" + encodeURIComponent(id)).then(function (listing) {
      var found = (listing.activities || []).filter(function (item) { return item.id === id; })[0];
      return found || api("GET", "/v1/activities/" + encodeURIComponent(id));
    });
  }
  function wholeHistory(id, cursor, collected) {
    collected = collected || [];
    return api("GET", "/v1/activities/" + encodeURIComponent(id) + "/events?limit=1000" + (cursor ? "&cursor=" + cursor : "")).then(function (listing) {
      collected = collected.concat(listing.events);
      return listing.next ? wholeHistory(id, listing.next, collected) : collected;
    });
  }
  // The Lock Screen card and the expanded island, as the display frames them.
  function frames(p) {
    var card = "";
    if (p.backgroundTint) card = " style=\"--card-l:" + p.backgroundTint.light + ";--card-d:" + p.backgroundTint.dark + "\"";
    var keyline = p.keylineTint ? " style=\"--keyline:" + p.keylineTint.dark + "\"" : "";
    return "<section class=\"islet-card" + (p.isStale ? " islet-stale" : "") + "\"" + card + ">" + p.lockScreen + "</section>" +
      "<section class=\"islet-island islet-expanded la-dark\"" + keyline + "><div class=\"islet-top\"><div class=\"islet-slot islet-leading\">" +
      p.expandedLeading + "</div><div class=\"islet-slot islet-center\">" + p.expandedCenter + "</div><div class=\"islet-slot islet-trailing\">" +
      p.expandedTrailing + "</div></div><div class=\"islet-slot islet-bottom\">" + p.expandedBottom + "</div></section>";
  }
  // An event in words: a head, why, and details.
  function describe(event) {
    var data = event.data || {}, head = event.type, why = "", detail = "";
    switch (event.type) {
      case "started": head = "Started"; why = data.activityState === "pending" ? "scheduled" : ""; break;
      case "contentUpdated": head = "Updated"; detail = "state " + JSON.stringify(data.content && data.content.state); break;
      case "alert": head = "Alert"; why = [data.title, data.body].filter(Boolean).map(function (part) { return typeof part === "string" ? part : JSON.stringify(part); }).join(": "); break;
      case "updateIgnored":
        head = "Ignored " + (data.action || "update");
        why = WORDS.ignore[data.reason] || data.reason;
        if (data.reason === "olderTimestamp" && data.lastUpdateTimestamp) why += " (timestamp " + clock(data.timestamp) + " < " + clock(data.lastUpdateTimestamp) + ")";
        detail = data.message || "";
        break;
      case "stateChanged": head = "Now " + data.to; why = WORDS.state[data.reason] || data.reason; break;
      case "delivery":
        // A line about the renewal, not about a request: no delivery to name or send again.
        if (data.event === "renew") { head = data.outcome === "held" ? "Renewal: not on the phone" : "Renewal"; why = data.note || ""; break; }
        head = "Delivery " + data.delivery + " (" + data.event + "): " + (WORDS.outcome[data.outcome] || data.outcome);
        var parts = [];
        if (data.attempt) parts.push("attempt " + data.attempt);
        if (data.priority) parts.push("priority " + data.priority + (data.priorityReason ? " (" + data.priorityReason + ")" : ""));
        if (data.status) parts.push("Apple " + data.status + (data.reason ? " " + data.reason : ""));
        else if (data.attempt && data.outcome !== "queued") parts.push("no answer from Apple");
        if (data.latencyMs !== undefined) parts.push(Math.round(data.latencyMs) + " ms");
        if (data.nextAttemptAt) parts.push("next try " + clock(data.nextAttemptAt));
        if (data.coalescedInto) parts.push("into delivery " + data.coalescedInto);
        if (data.target) parts.push("to " + data.target);
        why = data.note || "";
        detail = parts.join(" · ");
        break;
      case "pushTokenUpdated":
        head = "Push token updated";
        why = { phoneUpdate: "the phone's update token", phonePushToStart: "the phone's push-to-start token" + (data.attributesType ? " for " + data.attributesType : ""), fcm: "the phone's FCM registration token" }[data.kind] || "";
        break;
      default: break;
    }
    return { head: head, why: why, detail: detail, title: clock(event.time) + " " + head + (why ? " — " + why : "") };
  }
  function deliverySwitch(bundleId) {
    api("GET", "/v1/apps/" + encodeURIComponent(bundleId)).then(function (app) {
      var pausing = !app.deliveryPaused;
      act(pausing ? "Pause delivery for " + bundleId : "Resume delivery for " + bundleId,
        pausing ? "Changes for real phones wait in the outbox, held, until delivery resumes. The credentials stay."
          : "What was held goes to Apple now.",
        "PATCH", "/v1/apps/" + encodeURIComponent(bundleId), { deliveryPaused: pausing });
    }, function (error) { toast(error.message); });
  }

  // ---- 4. Requests to Islet's APNs endpoint.
  // New requests are added on top as they come; a row once drawn is never drawn again (a
  // request's line does not change), so what the reader opened stays open.
  function pushesView() {
    var body = el("tbody", {});
    var pager = el("div", { class: "pager" });
    var cursors = [null];
    main.appendChild(el("h1", { text: "Pushes to Islet's APNs endpoint" }));
    main.appendChild(el("p", { class: "sub", text: whoAmI === "app"
      ? "This node's last requests whose provider token verified for the app, newest first, as they were sent and answered, and what each push did on the device."
      : "This node's last 1,000 requests whose provider token verified for the app they name, and its last 100 others (no token, another app's, a fault played), newest first: as they were sent and answered, and what each push did on the device." }));
    main.appendChild(el("div", { class: "table-wrap" }, [el("table", { id: "pushes", class: "stack" }, [
      el("thead", {}, [el("tr", {}, [el("th", { text: "Time" }), el("th", { text: "Request" }), el("th", { text: "Answer" }), el("th", { text: "Time taken", class: "num" })])]),
      body
    ])]));
    main.appendChild(pager);
    function row(entry) {
      var answer = el("td", { "data-label": "Answer" }, [chip(String(entry.status), entry.status === 200 ? "ok" : entry.status >= 500 || entry.status === 429 ? "warn" : "bad"),
        entry.reason ? " " + entry.reason : ""]);
      if (entry.detail) answer.appendChild(el("div", { class: "detail", text: entry.detail }));
      (entry.outcomes || []).forEach(function (outcome) { answer.appendChild(outcomeLine(outcome)); });
      if (entry.reached > (entry.outcomes || []).length) {
        answer.appendChild(el("div", { class: "detail", text: "and " + (entry.reached - entry.outcomes.length) + " more activities" }));
      }
      var headers = Object.keys(entry.headers).sort().map(function (name) { return name + ": " + entry.headers[name]; }).join("\n");
      return el("tr", { "data-request": entry.id }, [
        el("td", { class: "time num", "data-label": "Time", title: dateTime(entry.time), text: clock(entry.time) }),
        el("td", { "data-label": "Request" }, [el("div", { class: "mono", text: entry.method + " " + entry.path }),
          el("details", {}, [el("summary", { text: (entry.bundleId || "no app: not verified for one") + " · " + entry.payloadBytes + " bytes" }),
            el("pre", { class: "json", text: headers + (entry.payload ? "\n\n" + entry.payload : "") })])]),
        answer,
        el("td", { class: "num", "data-label": "Time taken", text: entry.latencyMs.toFixed(1) + " ms" })
      ]);
    }
    // What the push did on one device: applied to its activity, or dropped, and why.
    function outcomeLine(outcome) {
      var line = el("div", { class: "outcome" + (outcome.dropped ? " dropped" : ""), "data-dropped": outcome.dropped });
      line.appendChild(document.createTextNode(outcome.dropped ? "Dropped by the device: " + (WORDS.ignore[outcome.dropped] || outcome.dropped) : "Applied"));
      if (outcome.activityId) {
        line.appendChild(document.createTextNode(outcome.dropped ? " · " : " to "));
        line.appendChild(el("a", { href: "/console/activities/" + outcome.activityId, "data-link": true, "data-activity": outcome.activityId },
          ["activity ", el("span", { class: "mono", text: short(outcome.activityId) })]));
      } else {
        line.appendChild(document.createTextNode(" · device " + outcome.device));
      }
      if (outcome.message) line.appendChild(el("div", { class: "detail", text: outcome.message }));
      return line;
    }
    function empty() {
      return el("tr", {}, [el("td", { class: "empty", colspan: "4", text: "No request yet: point a provider at the APNs endpoint (docs/apns.md)." })]);
    }
    // The newest page: rows for new requests go on top, those that fell off the page go.
    function merge(requests) {
      var shown = {};
      Array.prototype.forEach.call(body.querySelectorAll("tr[data-request]"), function (tr) { shown[tr.dataset.request] = tr; });
      var keep = {};
      requests.forEach(function (entry) { keep[entry.id] = true; });
      Object.keys(shown).forEach(function (id) { if (!keep[id]) shown[id].remove(); });
      var next = body.querySelector("tr[data-request]");
      requests.forEach(function (entry) {
        var existing = shown[entry.id];
        if (existing) { next = existing.nextElementSibling; return; }
        body.insertBefore(row(entry), next);
      });
      var placeholder = body.querySelector("td.empty");
      if (requests.length && placeholder) placeholder.parentNode.remove();
      if (!requests.length && !placeholder) body.appendChild(empty());
    }
    function load() {
      var cursor = cursors[cursors.length - 1];
      return api("GET", "/v1/apns/requests?limit=50" + (cursor ? "&cursor=" + cursor : "")).then(function (listing) {
        if (cursor) {
          body.textContent = "";
          listing.requests.forEach(function (entry) { body.appendChild(row(entry)); });
          if (!listing.requests.length) body.appendChild(empty());
        } else {
          merge(listing.requests);
        }
        pager.textContent = "";
        pager.appendChild(el("button", { text: "Newest", disabled: cursors.length === 1, onclick: function () { cursors = [null]; body.textContent = ""; load(); } }));
        pager.appendChild(el("button", { text: "Older", disabled: !listing.next, onclick: function () { cursors.push(listing.next); load(); } }));
      }, failed);
    }
    load();
    every(function () { if (cursors.length === 1) load(); }, 3000);
  }

  // A view's heading and words, and the element its items go in.
  function listView(id, title, words) {
    var list = el("div", { id: id });
    main.appendChild(el("h1", { text: title }));
    main.appendChild(el("p", { class: "sub", text: words }));
    main.appendChild(list);
    return list;
  }
  // What `read` gives for each app the console sees (a promise of a list), as one list.
  function fromEveryApp(read) {
    return api("GET", "/v1/apps").then(function (listing) {
      return Promise.all(listing.apps.map(function (app) { return read(app.bundleId); }));
    }).then(function (lists) { return [].concat.apply([], lists); });
  }

  // ---- 5. Webhooks: each app's endpoints, where each stands, and its attempts (docs/webhooks.md).
  function webhooksView() {
    var list = listView("webhooks", "Webhooks", "Where each endpoint stands and every request made to it, newest first: the status, the time taken, and the first bytes of the answer. An endpoint sends one activity's events in order: a failing one holds its later events until it answers, on the retry schedule. Endpoints are saved with a key (islet webhooks add, or the API).");
    var failedOnly = {};
    function stateOf(endpoint) {
      if (!endpoint.enabled) return { text: "disabled", kind: "bad" };
      if (endpoint.failing) return { text: "failing", kind: "warn" };
      return { text: "sending", kind: "ok" };
    }
    function attemptRow(attempt) {
      var answer = attempt.status != null
        ? chip(String(attempt.status), attempt.status >= 200 && attempt.status < 300 ? "ok" : attempt.status >= 500 || attempt.status === 429 ? "warn" : "bad")
        : chip("no answer", "bad");
      var cells = [answer];
      if (attempt.error) cells.push(el("div", { class: "detail", text: attempt.error }));
      if (attempt.deadLetter) cells.push(el("div", { class: "detail", text: "dead letter: its attempts ran out (replay sends it again)" }));
      if (attempt.response) cells.push(el("details", {}, [el("summary", { text: "the answer's first bytes" }), el("pre", { class: "json", text: attempt.response })]));
      return el("tr", { "data-attempt": attempt.id, "data-status": attempt.status == null ? "none" : String(attempt.status) }, [
        el("td", { class: "time num", "data-label": "Time", title: dateTime(attempt.at), text: clock(attempt.at) }),
        el("td", { "data-label": "Event" }, [el("span", { class: "mono", text: attempt.event }), " " + attempt.type,
          attempt.attempt > 1 ? el("div", { class: "detail", text: "attempt " + attempt.attempt }) : ""]),
        el("td", { "data-label": "Answer" }, cells),
        el("td", { class: "num", "data-label": "Time taken", text: attempt.latencyMs != null ? attempt.latencyMs.toFixed(1) + " ms" : "" })
      ]);
    }
    function endpointPanel(endpoint) {
      var path = "/v1/apps/" + encodeURIComponent(endpoint.bundleId) + "/webhooks/" + encodeURIComponent(endpoint.id);
      var state = stateOf(endpoint);
      var body = el("tbody", {});
      var facts = [el("div", { class: "mono", text: endpoint.url }),
        el("div", { class: "detail", text: endpoint.bundleId + " · " + endpoint.id + " · events: " + endpoint.events.join(", ") + (endpoint.description ? " · " + endpoint.description : "") })];
      if (endpoint.disabledReason) facts.push(el("div", { class: "detail", text: "Disabled: " + endpoint.disabledReason }));
      if (endpoint.failing) {
        var f = endpoint.failing;
        facts.push(el("div", { class: "detail", text: "Holding at " + f.event + ": " + f.attempts + (f.attempts === 1 ? " attempt" : " attempts") + (f.since ? " since " + dateTime(f.since) : "") +
          (f.nextAttemptAt ? ", the next at " + clock(f.nextAttemptAt) : "") }));
      }
      var only = el("input", { type: "checkbox", checked: !!failedOnly[endpoint.id], onchange: function () { failedOnly[endpoint.id] = only.checked; attempts(); } });
      var actions = el("div", { class: "toolbar" }, [
        chip(state.text, state.kind),
        el("button", { text: "Send a test", "data-action": "test", onclick: function () {
          api("POST", path + "/test", {}).then(function (attempt) {
            toast("Test event: " + (attempt.status != null ? "answered " + attempt.status : attempt.error || "no answer"));
            attempts();
          }, function (error) { toast("Test event: " + (error.message || error.reason)); });
        } }),
        el("button", { text: "Replay the last hour", "data-action": "replay", onclick: function () {
          act("Replay the last hour to " + endpoint.url,
            "Every event of the last hour this endpoint asks for is sent again, in order, after what it is sending now. Receivers deduplicate by webhook-id.",
            "POST", path + "/replay", { since: String(Date.now() / 1000 - 3600) }, function () { load(); });
        } }),
        el("label", {}, [only, " failed only"])
      ]);
      var panel = el("section", { class: "panel endpoint", "data-endpoint": endpoint.id, "data-state": state.text }, [
        el("h2", {}, facts), actions,
        el("div", { class: "table-wrap" }, [el("table", { class: "stack attempts" }, [
          el("thead", {}, [el("tr", {}, [el("th", { text: "Time" }), el("th", { text: "Event" }), el("th", { text: "Answer" }), el("th", { text: "Time taken", class: "num" })])]),
          body
        ])])
      ]);
      function attempts() {
        return api("GET", path + "/attempts?limit=25" + (failedOnly[endpoint.id] ? "&failed=true" : "")).then(function (answer) {
          body.textContent = "";
          answer.attempts.forEach(function (attempt) { body.appendChild(attemptRow(attempt)); });
          if (!answer.attempts.length) body.appendChild(el("tr", {}, [el("td", { class: "empty", colspan: "4", text: "No request yet." })]));
        }, failed);
      }
      attempts();
      return panel;
    }
    function load() {
      return fromEveryApp(function (bundleId) {
        return api("GET", "/v1/apps/" + encodeURIComponent(bundleId) + "/webhooks").then(function (answer) { return answer.webhooks; });
      }).then(function (endpoints) {
        list.textContent = "";
        endpoints.forEach(function (endpoint) { list.appendChild(endpointPanel(endpoint)); });
        if (!endpoints.length) list.appendChild(el("p", { class: "notice", text: "No endpoint yet: islet webhooks add --app <bundleId> --url https://… (docs/webhooks.md), or islet webhooks listen --forward-to http://127.0.0.1:3000/hook." }));
      }, failed);
    }
    load();
    every(load, 5000);
  }

  // ---- 6. Sends: each app's sends, newest first, how far each has got, and what it did on the
  // phones it could not reach (docs/audiences.md).
  function sendsView() {
    var list = listView("sends", "Sends", "One call's start, update or end for an audience, now or at a time: how many phones its audience came to, and what it did on each. A scheduled or running send can be cancelled here; sends are made with a key (islet send, or the API).");
    var open = {};
    function audience(a) {
      if (a === "all") return "every user's phones";
      if (a.users) return a.users.length + (a.users.length === 1 ? " user" : " users");
      if (a.tags) return "users with " + Object.keys(a.tags).sort().map(function (name) { return name + "=" + a.tags[name]; }).join(", ");
      if (a.devices) return a.devices.length + (a.devices.length === 1 ? " device" : " devices");
      if (a.send) return "the phones " + a.send + " started";
      if (a.activity) return "activity " + a.activity;
      return "";
    }
    var kinds = { scheduled: "warn", running: "ok", done: "ok", cancelled: "bad" };
    function sendPanel(send) {
      var path = "/v1/apps/" + encodeURIComponent(send.bundleId) + "/sends/" + encodeURIComponent(send.id);
      var c = send.counts;
      var done = c.started + c.updated + c.ended + c.skipped + c.failed;
      var when = send.status === "scheduled" ? "at " + dateTime(send.body.at) : send.finishedAt ? "finished " + dateTime(send.finishedAt) : "made " + dateTime(send.createdAt);
      var facts = [el("div", {}, [el("span", { class: "mono", text: send.body.action + " " + send.body.key }), " on " + audience(send.body.audience)]),
        el("div", { class: "detail", text: send.bundleId + " · " + send.id + " · " + when + (send.followUp ? " · its end: " + send.followUp : "") })];
      var tally = c.targeted === 0 && !send.resolved ? "its audience not resolved yet"
        : c.targeted + (c.targeted === 1 ? " phone: " : " phones: ") + [["started", c.started], ["updated", c.updated], ["ended", c.ended], ["skipped", c.skipped], ["failed", c.failed]]
          .filter(function (pair) { return pair[1] > 0; }).map(function (pair) { return pair[1] + " " + pair[0]; }).join(", ") + (done < c.targeted ? ", " + (c.targeted - done) + " to go" : "");
      var bar = el("progress", { max: String(Math.max(c.targeted, 1)), value: String(done), "aria-label": "phones done" });
      var actions = el("div", { class: "toolbar" }, [chip(send.status, kinds[send.status]), el("span", { class: "tally", text: tally })]);
      if (send.status === "scheduled" || send.status === "running") {
        actions.appendChild(el("button", { text: "Cancel", "data-action": "cancel", onclick: function () {
          act("Cancel " + send.id, send.status === "running"
            ? "It stops after the batch it is in: the phones it reached keep what it did."
            : "It does not run" + (send.followUp ? ", and its end (" + send.followUp + ") is cancelled with it." : "."),
            "DELETE", path, undefined, function () { load(); });
        } }));
      }
      var panel = el("section", { class: "panel send", "data-send": send.id, "data-status": send.status }, [el("h2", {}, facts), actions, bar]);
      if (c.failed > 0) {
        var failures = el("tbody", {});
        var details = el("details", { open: !!open[send.id], ontoggle: function () {
          open[send.id] = details.open;
          if (details.open) targets();
        } }, [el("summary", { text: "The phones it could not reach" }), el("div", { class: "table-wrap" }, [el("table", { class: "stack targets" }, [
          el("thead", {}, [el("tr", {}, [el("th", { text: "Phone" }), el("th", { text: "Why" })])]), failures
        ])])]);
        function targets() {
          api("GET", path + "/targets?outcome=failed&limit=50").then(function (answer) {
            failures.textContent = "";
            answer.targets.forEach(function (target) {
              failures.appendChild(el("tr", { "data-device": target.deviceId }, [
                el("td", { class: "mono", "data-label": "Phone", text: target.deviceId }),
                el("td", { "data-label": "Why", text: target.reason || "" })
              ]));
            });
          }, failed);
        }
        if (details.open) targets();
        panel.appendChild(details);
      }
      return panel;
    }
    // An app's sends come oldest first, a page of up to 1,000 at a time: every page is read.
    function allSends(bundleId, cursor, sends) {
      return api("GET", "/v1/apps/" + encodeURIComponent(bundleId) + "/sends?limit=1000" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "")).then(function (answer) {
        sends = sends.concat(answer.sends);
        return answer.next ? allSends(bundleId, answer.next, sends) : sends;
      });
    }
    function load() {
      return fromEveryApp(function (bundleId) { return allSends(bundleId, null, []); }).then(function (sends) {
        sends = sends.sort(function (a, b) { return b.createdAt - a.createdAt; }).slice(0, 100);
        list.textContent = "";
        sends.forEach(function (send) { list.appendChild(sendPanel(send)); });
        if (!sends.length) list.appendChild(el("p", { class: "notice", text: "No send yet: islet send start <Type> --by-key K --tags name=value (docs/audiences.md), or POST /v1/apps/<bundleId>/sends." }));
      }, failed);
    }
    load();
    every(load, 3000);
  }

  // ---- 7. Installations: the phones that registered with a client key, and what each reported
  // and when (docs/installations.md, "Seeing them from the backend").
  function installationsView() {
    var body = el("tbody", {});
    main.appendChild(el("h1", { text: "Installations" }));
    main.appendChild(el("p", { class: "sub", text: "The phones an app's builds registered with its client keys, newest first, and what each reported: its push-to-start token of each activity type, the update token of each activity, its FCM address; a retired one says when and why. An activity's status (its timeline) names a missing one." }));
    main.appendChild(el("div", { class: "table-wrap" }, [el("table", { id: "installations", class: "stack" }, [
      el("thead", {}, [el("tr", {}, ["Installation", "User", "Client key", "Registered", "Last seen", "Reported"].map(function (name) { return el("th", { text: name }); }))]),
      body
    ])]));
    function reported(tokens) {
      var cell = el("td", { "data-label": "Reported" });
      if (!tokens.length) cell.appendChild(el("div", { class: "detail", text: "nothing yet" }));
      tokens.forEach(function (token) {
        var what = token.kind === "pushToStart" ? "push-to-start " + (token.attributesType || "")
          : token.kind === "update" ? "update token of " : token.kind === "fid" ? "Firebase installation ID" : "FCM token";
        var line = el("div", { class: "token" + (token.retiredAt ? " retired" : ""), "data-kind": token.kind }, [what]);
        if (token.kind === "update" && token.activityId) {
          line.appendChild(el("a", { href: "/console/activities/" + token.activityId, "data-link": true, class: "mono", text: short(token.activityId) }));
        }
        line.appendChild(el("span", { class: "detail", text: " · " + token.token + " · " + ago(token.lastAt || token.createdAt)
          + (token.retiredAt ? " · retired " + ago(token.retiredAt) + (token.retiredReason ? " (" + token.retiredReason + ")" : "") : "") }));
        cell.appendChild(line);
      });
      return cell;
    }
    function row(report) {
      var i = report.installation;
      return el("tr", { "data-installation": i.id }, [
        el("td", { "data-label": "Installation" }, [el("div", { class: "mono", text: i.id }),
          el("div", { class: "detail", text: i.bundleId + " · " + i.platform + (i.platform === "ios" ? " (" + i.environment + ")" : "") }),
          i.revoked ? chip("revoked", "bad") : ""]),
        el("td", { "data-label": "User" }, [el("span", { class: i.userId ? "mono" : "", text: i.userId || "—" })]),
        el("td", { "data-label": "Client key" }, [el("span", { class: "mono", text: i.clientKeyId })]),
        el("td", { "data-label": "Registered", title: dateTime(i.createdAt), text: ago(i.createdAt) }),
        el("td", { "data-label": "Last seen", title: dateTime(i.lastSeenAt), text: ago(i.lastSeenAt) }),
        reported(report.tokens)
      ]);
    }
    function load() {
      return fromEveryApp(function (bundleId) {
        return api("GET", "/v1/installations?limit=100&bundleId=" + encodeURIComponent(bundleId)).then(function (answer) { return answer.installations; });
      }).then(function (reports) {
        reports.sort(function (a, b) { return b.installation.createdAt - a.installation.createdAt; });
        body.textContent = "";
        reports.slice(0, 200).forEach(function (report) { body.appendChild(row(report)); });
        if (!reports.length) {
          body.appendChild(el("tr", {}, [el("td", { colspan: "6", class: "notice", text: "No installation yet: an app registers one with a client key (islet apps client-keys add <bundleId>; docs/installations.md)." })]));
        }
      }, failed);
    }
    load();
    every(load, 5000);
  }

  // ---- Start: who am I, then the stream and the view.
  function start() {
    api("GET", "/v1/overview").then(function (overview) {
      var scope = document.getElementById("scope");
      if (!key) { whoAmI = "keyless"; scope.textContent = "this machine, no key"; }
      else if (overview.bundleId) { whoAmI = "app"; scope.textContent = "app " + overview.bundleId; }
      else { whoAmI = "admin"; scope.textContent = "admin"; }
      connect();
      route();
    }, function (error) {
      if (error.status !== 401) { main.textContent = ""; failed(error); }
    });
  }
  start();
})();
