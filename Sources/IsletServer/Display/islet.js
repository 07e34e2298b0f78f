// islet.js — the Scripting app's LiveActivity API (https://scripting.fun), against an Islet
// server, with no dependencies: load it with <script src="/islet.js"></script> and call
//
//   LiveActivity.configure({ key: "islet_app_…" });            // server: this page's origin
//   const MyLiveActivity = LiveActivity.register("MyLiveActivity");
//   const activity = MyLiveActivity();
//   await activity.start({ mins: 5 });                          // → true
//   await activity.update({ mins: 4 }, { alert: { title: "Drink", body: "4 minutes" } });
//   await activity.end({ mins: 0 }, { dismissTimeInterval: 0 });
//
// The name given to register() is the activity type (attributesType); a second argument may be
// the type's layout document (docs/layouts.md), registered with the server, in place of the
// Scripting app's TSX builder. Content states are plain JSON; dates are timestamps, as there.
(function (global) {
  "use strict";

  var settings = { server: "", key: null, device: "default" };

  function request(method, path, body) {
    var headers = { Accept: "application/json" };
    if (settings.key) headers.Authorization = "Bearer " + settings.key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(settings.server + path, {
      method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body),
    }).then(function (response) {
      return response.text().then(function (text) {
        var json = text ? JSON.parse(text) : null;
        if (response.ok) return json;
        var error = new Error((json && json.error && json.error.message) || "HTTP " + response.status);
        error.reason = json && json.error && json.error.reason;
        error.status = response.status;
        throw error;
      });
    });
  }

  // staleDate: a timestamp in milliseconds or a Date; the server counts seconds.
  function seconds(date) {
    if (date === undefined || date === null) return undefined;
    return (date instanceof Date ? date.getTime() : Number(date)) / 1000;
  }

  function content(state, options) {
    options = options || {};
    var result = { state: state };
    if (options.staleDate !== undefined) result.staleDate = seconds(options.staleDate);
    if (options.relevanceScore !== undefined) result.relevanceScore = options.relevanceScore;
    return result;
  }

  // dismissTimeInterval (seconds): none → the system's default, ≤ 0 → at once, > 0 → after it.
  function dismissalPolicy(options) {
    var interval = options && options.dismissTimeInterval;
    if (interval === undefined || interval === null) return "default";
    if (interval <= 0) return "immediate";
    return { after: Date.now() / 1000 + interval };
  }

  function activityPath(id) {
    return "/v1/activities/" + encodeURIComponent(id);
  }

  function LiveActivity(name, activityId) {
    this.name = name;
    this.activityId = activityId || null;
    this._listeners = [];
    this._source = null;
  }

  // Starts the activity; resolves true once the server has it, false when it refuses.
  LiveActivity.prototype.start = function (contentState, options) {
    var self = this;
    return request("POST", "/v1/activities", {
      attributesType: this.name, attributes: {}, content: content(contentState, options), device: settings.device,
    }).then(function (activity) {
      self.activityId = activity.id;
      if (self._listeners.length) self._follow();
      return true;
    }, function (error) {
      self.lastError = error;
      return false;
    });
  };

  LiveActivity.prototype.update = function (contentState, options) {
    var body = { content: content(contentState, options) };
    if (options && options.alert) body.alert = { title: options.alert.title, body: options.alert.body };
    return this._send("/update", body);
  };

  LiveActivity.prototype.end = function (contentState, options) {
    var body = { dismissalPolicy: dismissalPolicy(options) };
    if (contentState !== undefined && contentState !== null) body.content = content(contentState, options);
    return this._send("/end", body);
  };

  LiveActivity.prototype._send = function (action, body) {
    var self = this;
    if (!this.activityId) return Promise.resolve(false);
    return request("POST", activityPath(this.activityId) + action, body).then(
      function () { return true; },
      function (error) { self.lastError = error; return false; }
    );
  };

  // "active", "stale", "ended", "dismissed", or null before start (or for an unknown id).
  LiveActivity.prototype.getActivityState = function () {
    return this.activityId ? LiveActivity.getActivityState(this.activityId) : Promise.resolve(null);
  };

  // Calls listener(state) at each change of state, from the server's event stream.
  LiveActivity.prototype.addUpdateListener = function (listener) {
    this._listeners.push(listener);
    if (this.activityId) this._follow();
  };

  LiveActivity.prototype.removeUpdateListener = function (listener) {
    this._listeners = this._listeners.filter(function (candidate) { return candidate !== listener; });
    if (!this._listeners.length && this._source) {
      this._source.close();
      this._source = null;
    }
  };

  LiveActivity.prototype._follow = function () {
    if (this._source || typeof EventSource === "undefined") return;
    var self = this;
    // From the activity's first event: a listener added before start() hears every change.
    var url = settings.server + "/v1/events?activity=" + encodeURIComponent(this.activityId) + "&since=0"
      + (settings.key ? "&key=" + encodeURIComponent(settings.key) : "");
    this._source = new EventSource(url);
    this._source.addEventListener("stateChanged", function (message) {
      var state = JSON.parse(message.data).data.to;
      self._listeners.slice().forEach(function (listener) { listener(state); });
      if (state === "dismissed" && self._source) {
        // Nothing follows a dismissal.
        self._source.close();
        self._source = null;
      }
    });
  };

  // Where the server is (this page's origin by default), with which app key, for which device.
  LiveActivity.configure = function (options) {
    if (options.server !== undefined) settings.server = String(options.server).replace(/\/$/, "");
    if (options.key !== undefined) settings.key = options.key;
    if (options.device !== undefined) settings.device = options.device;
  };

  // A factory for activities of type `name`; `layout`, if given, is registered for the type.
  LiveActivity.register = function (name, layout) {
    var factory = function () { return new LiveActivity(name); };
    if (layout && typeof layout === "object") {
      factory.registered = request("GET", "/v1/apps").then(function (answer) {
        var app = answer.apps[0];
        return request("PUT", "/v1/apps/" + encodeURIComponent(app.bundleId) + "/layouts/" + encodeURIComponent(name), layout);
      });
    } else {
      factory.registered = Promise.resolve(null);
    }
    return factory;
  };

  // Whether Live Activities are on for the app on the device.
  LiveActivity.areActivitiesEnabled = function () {
    return request("GET", "/v1/devices/" + encodeURIComponent(settings.device) + "/settings").then(function (answer) {
      return answer.settings.length > 0 && answer.settings[0].activitiesEnabled;
    }, function () { return false; });
  };

  // The app's activities on the device that are not dismissed: [{id, state}].
  LiveActivity.getAllActivities = function () {
    return request("GET", "/v1/activities?state=pending,active,stale,ended&limit=1000&device=" + encodeURIComponent(settings.device))
      .then(function (answer) {
        return answer.activities.map(function (activity) { return { id: activity.id, state: activity.activityState }; });
      });
  };

  LiveActivity.getAllActivitiesIds = function () {
    return LiveActivity.getAllActivities().then(function (all) { return all.map(function (detail) { return detail.id; }); });
  };

  LiveActivity.getActivityState = function (activityId) {
    return request("GET", activityPath(activityId)).then(
      function (activity) { return activity.activityState; },
      function () { return null; }
    );
  };

  // An object for an activity that already exists (started by another script, say).
  LiveActivity.from = function (activityId, name) {
    return new LiveActivity(name, activityId);
  };

  LiveActivity.endAllActivities = function (options) {
    return LiveActivity.getAllActivities().then(function (all) {
      return Promise.all(all.filter(function (detail) { return detail.state !== "ended"; }).map(function (detail) {
        return request("POST", activityPath(detail.id) + "/end", { dismissalPolicy: dismissalPolicy(options) });
      }));
    }).then(function () { return true; });
  };

  global.LiveActivity = LiveActivity;
})(typeof window !== "undefined" ? window : globalThis);
